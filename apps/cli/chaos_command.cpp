// `darcy chaos`: fault injection against a running cluster.
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/chaos/soak.hpp"
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

  auto so = std::make_shared<soak_options>();
  auto soak = chaos->add_subcommand(
    "soak",
    "Run a job on a local cluster while a seeded killer SIGKILLs nodes and every service "
    "drops and delays a share of its messages; compare with a clean run");
  soak
    ->add_option("--job", so->job,
                 "wals, word2vec, moe, estimator (Fashion-MNIST's DNN), ctr (DLRM on generated "
                 "clicks, tables on the ps), serving (darcy serve with shard servers on the "
                 "nodes) or online (a streaming DLRM synced to darcy serve, whose embeddings "
                 "are on the nodes; the training process is killed too)")
    ->check(CLI::IsMember({"wals", "word2vec", "moe", "estimator", "ctr", "serving", "online"}));
  soak->add_option("--kills", so->kills, "Non-seed nodes SIGKILLed, at seeded random times")
    ->check(CLI::Range(0, 100));
  soak->add_option("--drop", so->drop, "Fraction of every service's messages dropped")
    ->check(CLI::Range(0.0, 1.0));
  soak->add_option("--delay", so->delay, "Fraction delayed by --delay-ms")
    ->check(CLI::Range(0.0, 1.0));
  soak->add_option("--delay-ms", so->delay_ms, "Delay of the delayed messages")
    ->check(CLI::Range(0, 60000));
  soak->add_option("--seed", so->seed, "Seed of the kills, the disruptions and the job");
  soak->add_option("--nodes", so->nodes, "Nodes, the seed (never killed) included")
    ->check(CLI::Range(2, 64));
  soak->add_option("--dir", so->dir, "Work directory (emptied first)");
  soak
    ->add_option("--timeout-s", so->timeout_s,
                 "Fail a soaked run still going after this long (0: 10 clean runs, at least 300 s)")
    ->check(CLI::Range(0.0, 86400.0));
  soak->add_flag("--quiet", so->quiet, "No progress lines");
  soak->add_flag(
    "--no-lag-check", [so](int64_t) { so->lag_check = false; },
    "online: count the answers more than two sync intervals behind without failing "
    "the run (a machine too loaded to time anything)");
  soak->callback([so, &exit_code] {
    auto r = run_soak(*so);
    if (!r) {
      exit_code = fail("chaos soak", r.error());
      return;
    }
    std::cout << "soak of " << so->job << ", seed " << so->seed << "\n"
              << "  completed        " << (r->completed ? "yes" : "no: " + r->failure) << "\n"
              << "  kills, restarts  " << r->kills << ", " << r->restarts << "\n"
              << "  recovery         p50 " << r->recover_p50_s << " s, max " << r->recover_max_s
              << " s\n"
              << "  lost work        " << r->lost_work
              << (so->job == "wals"  ? " blocks issued again"
                  : so->job == "moe" ? " steps replayed"
                  : so->job == "estimator" || so->job == "ctr"
                    ? " worker steps in flight at a kill (at most), and "
                      "global steps replayed after a ps kill"
                  : so->job == "serving" || so->job == "online"
                    ? " requests refused (503 or 504) and asked again"
                    : " batches replayed")
              << "\n"
              << "  messages         " << r->dropped << " dropped, " << r->delayed << " delayed\n"
              << "  quality          " << r->quality << " (clean " << r->clean_quality << ", delta "
              << r->quality_delta << ")\n"
              << "  output           "
              << (so->job == "estimator" || so->job == "ctr" || so->job == "online"
                    ? "asynchronous training: not comparable byte for byte"
                  : so->job == "serving" && r->bit_equal
                    ? "every answer equal to the clean run's (ids and scores)"
                  : r->bit_equal ? "equal to the clean run's, byte for byte"
                                 : "differs from the clean run's, byte for byte")
              << "\n"
              << (so->job == "online"
                    ? "  training kills   " + std::to_string(r->training_kills) +
                        "\n  served syncs     " + std::to_string(r->ahead_answers) +
                        " ahead of training; after catching up (" + std::to_string(r->caught_up_s) +
                        " s after the last kill), " + std::to_string(r->stale_answers) +
                        " more than 2 intervals behind, lag at most " +
                        std::to_string(r->stale_max_s) + " s\n"
                    : std::string{})
              << "  time             " << r->seconds << " s (clean " << r->clean_seconds << " s)\n";
    std::cout << nlohmann::json{{"bench", "soak"}, {"metrics", soak_metrics(*so, *r)}}.dump()
              << std::endl;
    exit_code = r->completed ? 0 : 1;
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
