// The subcommands of `darcy-bench`, apart from the `darcy` executable users deploy: each
// benchmark runs its peer in the same invocation and ends with one JSON line; `soak` runs a job
// on a local cluster under seeded kills. Each add_* registers its subcommands on `app`; their
// callbacks set `exit_code`.
#pragma once

#include <CLI/CLI.hpp>

namespace darcy::apps {

/// messaging, mips, serve-direct, moe, moe-gpu, estimator, ctr, embedding, redis, wals, online.
void add_bench_commands(CLI::App& app, int& exit_code);

/// soak.
void add_soak_command(CLI::App& app, int& exit_code);

} // namespace darcy::apps
