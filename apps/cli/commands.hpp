// The `darcy` subcommands. Each add_* registers one subcommand on the CLI; its callback sets
// `exit_code`. Commands are thin wiring: the work lives in ops/, actors/ and runtime/. fail()
// and add_choice() come from apps/command.
#pragma once

#include <CLI/CLI.hpp>

#include "apps/command/command_line.hpp"

namespace darcy::apps {

void add_node_command(CLI::App& app, int& exit_code);
void add_cluster_command(CLI::App& app, int& exit_code);
void add_chaos_command(CLI::App& app, int& exit_code);
void add_demo_command(CLI::App& app, int& exit_code);
void add_word2vec_command(CLI::App& app, int& exit_code);
void add_wals_command(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);
void add_moe_command(CLI::App& app, int& exit_code);
void add_estimator_command(CLI::App& app, int& exit_code);
void add_data_command(CLI::App& app, int& exit_code);

/// `darcy estimator ctr`, in a file of its own, registered on the `estimator` subcommand.
void add_estimator_ctr_command(CLI::App* estimator, int& exit_code);

} // namespace darcy::apps
