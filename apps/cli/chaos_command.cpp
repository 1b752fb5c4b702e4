// `darcy chaos`: fault injection against a running cluster (the seeded soak on a local
// cluster is `darcy-bench soak`).
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/cli/commands.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"
#include "runtime/cluster/chaos.hpp"
#include "runtime/cluster/cluster_file.hpp"

namespace darcy::apps {

namespace {

struct chaos_flags {
  std::string seed;
  std::string target;
  disruption plan;
  int64_t timeout_ms = 5000;
};

// Opens a session to --seed, runs `action`, and turns its error into the exit code.
template <class Action>
void with_session(const chaos_flags& f, int& exit_code, Action action) {
  auto address = runtime::resolve_seed(f.seed);
  if (!address) {
    exit_code = fail("--seed", address.error());
    return;
  }
  ops::session_options opts;
  opts.seed = *address;
  opts.name = "chaos";
  opts.threads = 1;
  opts.timeout = std::chrono::milliseconds{f.timeout_ms};
  auto session = ops::session::open(opts);
  if (!session) {
    exit_code = fail(render(session.error()));
    return;
  }
  auto err = action(**session);
  exit_code = err ? fail(render(err)) : 0;
}

CLI::App* add_target_command(CLI::App* chaos, const char* name, const char* what,
                             const char* target_help, std::shared_ptr<chaos_flags> f) {
  auto cmd = chaos->add_subcommand(name, what);
  cmd->add_option("target", f->target, target_help)->required();
  cmd->add_option("--seed", f->seed, "HOST:PORT of the seed node, or a cluster file or directory")
    ->required();
  cmd->add_option("--timeout-ms", f->timeout_ms, "Request timeout");
  return cmd;
}

} // namespace

void add_chaos_command(CLI::App& app, int& exit_code) {
  auto chaos = app.add_subcommand("chaos", "Inject failures into a running cluster");
  chaos->require_subcommand(1);
  auto f = std::make_shared<chaos_flags>();

  add_target_command(chaos, "kill-node", "SIGKILL a node's process", "node name", f)
    ->callback([f, &exit_code] {
      with_session(*f, exit_code, [&](ops::session& s) {
        auto err = runtime::kill_node(s.system(), s.registry(), f->target, s.timeout());
        if (!err)
          std::cout << "sent SIGKILL to node " << f->target << std::endl;
        return err;
      });
    });

  add_target_command(chaos, "kill-actor", "Kill the actor registered as a service", "service name",
                     f)
    ->callback([f, &exit_code] {
      with_session(*f, exit_code, [&](ops::session& s) {
        auto err = runtime::kill_service(s.system(), s.registry(), f->target, s.timeout());
        if (!err)
          std::cout << "killed service " << f->target << std::endl;
        return err;
      });
    });

  auto disrupt = add_target_command(
    chaos, "disrupt",
    "Drop or delay a seeded fraction of the messages sent to a service, until `chaos heal`",
    "service name", f);
  disrupt->add_option("--drop", f->plan.drop, "Fraction of messages dropped");
  disrupt->add_option("--delay", f->plan.delay, "Fraction of messages delayed");
  disrupt->add_option("--delay-ms", f->plan.delay_ms, "Delay in milliseconds");
  disrupt->add_option("--rng-seed", f->plan.seed, "RNG seed, for repeatable runs");
  disrupt->callback([f, &exit_code] {
    with_session(*f, exit_code, [&](ops::session& s) -> caf::error {
      auto before = runtime::command_gate(s.system(), s.registry(), f->target,
                                          {chaos_op::disrupt, f->plan}, s.timeout());
      if (!before)
        return std::move(before.error());
      std::cout << "service " << f->target << " now drops " << f->plan.drop << " and delays "
                << f->plan.delay << " of its messages by " << f->plan.delay_ms
                << " ms (darcy chaos heal " << f->target << " ends it)" << std::endl;
      return {};
    });
  });

  add_target_command(chaos, "heal", "End a service's disruption and print what it did",
                     "service name", f)
    ->callback([f, &exit_code] {
      with_session(*f, exit_code, [&](ops::session& s) -> caf::error {
        auto stats = runtime::command_gate(s.system(), s.registry(), f->target,
                                           {chaos_op::heal, {}}, s.timeout());
        if (!stats)
          return std::move(stats.error());
        std::cout << "service " << f->target << " healed; while disrupted it forwarded "
                  << stats->forwarded << ", dropped " << stats->dropped << " and delayed "
                  << stats->delayed << " messages" << std::endl;
        std::cout << "{\"forwarded\": " << stats->forwarded << ", \"dropped\": " << stats->dropped
                  << ", \"delayed\": " << stats->delayed << "}" << std::endl;
        return {};
      });
    });
}

} // namespace darcy::apps
