// `darcy cluster status`: members, their services and uptime, as the seed's registry sees them.
#include <iostream>

#include "apps/cli/commands.hpp"
#include "apps/cli/status_table.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"

namespace darcy::apps {

void add_cluster_command(CLI::App& app, int& exit_code) {
  auto cluster = app.add_subcommand("cluster", "Inspect a running cluster");
  cluster->require_subcommand(1);
  auto seed = std::make_shared<std::string>();
  auto timeout_ms = std::make_shared<int64_t>(5000);
  auto status = cluster->add_subcommand("status", "Print members, services and uptime");
  status->add_option("--seed", *seed, "HOST:PORT of the seed node")->required();
  status->add_option("--timeout-ms", *timeout_ms, "Request timeout");
  status->callback([seed, timeout_ms, &exit_code] {
    auto address = runtime::parse_host_port(*seed);
    if (!address) {
      exit_code = fail("--seed: " + render(address.error()));
      return;
    }
    ops::session_options opts;
    opts.seed = *address;
    opts.name = "cli";
    opts.threads = 1;
    opts.timeout = std::chrono::milliseconds{*timeout_ms};
    auto session = ops::session::open(opts);
    if (!session) {
      exit_code = fail(render(session.error()));
      return;
    }
    auto snapshot = (*session)->status();
    if (!snapshot) {
      exit_code = fail(render(snapshot.error()));
      return;
    }
    print_status(std::cout, *snapshot);
    exit_code = 0;
  });
}

} // namespace darcy::apps
