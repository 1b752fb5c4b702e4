// The --plugin flag of the commands whose process may hold shards of a table (node, serve,
// estimator ctr): shared libraries of update rules (docs/update-rules.md), loaded before the
// command starts anything, so that its tables may name their rules.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace darcy::apps {

/// Adds --plugin LIB (repeatable; DARCY_PLUGIN) to `cmd`, filling `paths`.
void add_plugin_option(CLI::App* cmd, std::vector<std::string>& paths);

/// Loads each of `paths` (ops::load_plugin) and says on stderr which rules each brought. The
/// exit code of the first failure (fail(), naming `command` and the library); 0 when all load.
int load_plugins(const std::vector<std::string>& paths, const std::string& command);

} // namespace darcy::apps
