// `darcy bench NAME`: the benchmarks, each ending with one machine-readable JSON line.
#include "apps/bench/messaging.hpp"
#include "apps/commands.hpp"

namespace darcy::apps {

void add_bench_command(CLI::App& app, int& exit_code) {
  auto bench = app.add_subcommand("bench", "Run a benchmark against its peers");
  bench->require_subcommand(1);
  auto opts = std::make_shared<messaging_bench_options>();
  auto messaging = bench->add_subcommand("messaging", "Actor messaging versus plain TCP");
  messaging->add_option("--count-1k", opts->count_1k, "Round trips per 1 KiB run");
  messaging->add_option("--count-256k", opts->count_256k, "Round trips per 256 KiB run");
  messaging->add_option("--latency-count", opts->latency_count, "Sequential round trips");
  messaging->add_option("--window", opts->window, "Requests in flight");
  messaging->add_option("--repetitions", opts->repetitions, "Runs per figure (median)");
  messaging->callback([opts, &exit_code] { exit_code = run_messaging_bench(*opts); });
}

} // namespace darcy::apps
