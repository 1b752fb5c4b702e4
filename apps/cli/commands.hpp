// The `darcy` subcommands. Each add_* registers one subcommand on the CLI; its callback sets
// `exit_code`. Commands are thin wiring: the work lives in ops/, actors/ and runtime/.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace darcy::apps {

void add_node_command(CLI::App& app, int& exit_code);
void add_cluster_command(CLI::App& app, int& exit_code);
void add_chaos_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_demo_command(CLI::App& app, int& exit_code);
void add_word2vec_command(CLI::App& app, int& exit_code);
void add_wals_command(CLI::App& app, int& exit_code);

/// Prints "darcy: error: MESSAGE" on one line to stderr and returns 1.
int fail(const std::string& message);

} // namespace darcy::apps
