// The `darcy` subcommands. Each add_* registers one subcommand on the CLI; its callback sets
// `exit_code`. Commands are thin wiring: the work lives in ops/, actors/ and runtime/.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <caf/error.hpp>

namespace darcy::apps {

void add_node_command(CLI::App& app, int& exit_code);
void add_cluster_command(CLI::App& app, int& exit_code);
void add_chaos_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_demo_command(CLI::App& app, int& exit_code);
void add_word2vec_command(CLI::App& app, int& exit_code);
void add_wals_command(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);
void add_moe_command(CLI::App& app, int& exit_code);
void add_estimator_command(CLI::App& app, int& exit_code);
void add_data_command(CLI::App& app, int& exit_code);

/// Prints "darcy: error: MESSAGE" on one line to stderr and returns 1.
int fail(const std::string& message);

/// Prints "darcy: error: WHAT: ERROR" and returns 1. A darcy error whose context already begins
/// with "WHAT: " (the ops layer names its operation too) does not name it twice.
int fail(const std::string& what, const caf::error& err);

/// Adds an option that takes one of `choices` by name. --help lists the names and shows the
/// current value of `value` as the default.
template <class T>
CLI::Option* add_choice(CLI::App* cmd, const std::string& flag, T& value,
                        const std::vector<std::pair<std::string, T>>& choices,
                        const std::string& help) {
  std::map<std::string, T> by_name(choices.begin(), choices.end());
  std::string names;
  std::string current;
  for (auto& [name, x] : choices) {
    names += (names.empty() ? "" : ", ") + name;
    if (x == value)
      current = name;
  }
  return cmd->add_option(flag, value, help)
    ->transform(CLI::CheckedTransformer(by_name).description("one of {" + names + "}"))
    ->default_str(current);
}

} // namespace darcy::apps
