// darcy-bench: the benchmarks and the chaos soak, as an executable of their own so that the
// `darcy` users deploy links none of them. Benchmarks that start nodes or training processes
// run the `darcy` beside this executable (runtime::sibling_executable).
#include "apps/bench/bench_commands.hpp"
#include "apps/command/command_line.hpp"

int main(int argc, char** argv) {
  darcy::apps::keep_large_blocks_in_the_heap();
  darcy::apps::set_program_name("darcy-bench");
  CLI::App app{"Darcy's benchmarks, each against its peers in the same run, and its chaos soak"};
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();
  app.fallthrough();
  darcy::apps::add_log_level_option(app);
  int exit_code = 0;
  darcy::apps::add_bench_commands(app, exit_code);
  darcy::apps::add_soak_command(app, exit_code);
  return darcy::apps::run_command_line(app, argc, argv, exit_code);
}
