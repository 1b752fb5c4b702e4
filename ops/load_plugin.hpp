// Loads a shared library of update rules (compute/rules/rule_plugin.hpp) into this process, so
// that tables naming its rules can be created here: what `darcy node --plugin LIB` and
// `darcy.load_plugin(path)` call. A library is never unloaded: rows may be updated by its rules
// until the process ends.
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "compute/rules/rule_registry.hpp"

namespace darcy::ops {

/// Registers the rules of the library at `path` in `registry` and answers their names. Loading
/// the same library again registers nothing and answers the same names. Fails, registering
/// none of its rules, with errc::not_found (no such file), errc::io_error (dlopen's message:
/// not a shared library, an unresolved symbol), errc::unsupported (not a rule plugin, or one
/// built for another rule_abi_version) or errc::invalid_config (a malformed rule name, or a
/// name another rule holds).
caf::expected<std::vector<std::string>> load_plugin(
  const std::string& path, compute::rule_registry& registry = compute::rule_registry::global());

} // namespace darcy::ops
