// `darcy-bench soak`: a job on a local cluster of `darcy node` processes while a seeded killer
// SIGKILLs nodes and every service drops and delays a share of its messages, compared with a
// clean run; a report and one JSON line.
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/bench/bench_commands.hpp"
#include "apps/chaos/soak.hpp"
#include "apps/command/command_line.hpp"

namespace darcy::apps {

void add_soak_command(CLI::App& app, int& exit_code) {
  auto so = std::make_shared<soak_options>();
  auto soak = app.add_subcommand(
    "soak",
    "Run a job on a local cluster while a seeded killer SIGKILLs nodes and every service "
    "drops and delays a share of its messages; compare with a clean run");
  soak
    ->add_option("--job", so->job,
                 "wals, word2vec, moe, estimator (Fashion-MNIST's DNN), ctr (DLRM on generated "
                 "clicks, tables on the ps), serving (darcy serve with shard servers on the "
                 "nodes) or online (a streaming DLRM synced to darcy serve, whose embeddings "
                 "are on the nodes; the training process is killed too) or online-cluster (the "
                 "same stream as a job of a chief, a ps and 2 workers pushing its syncs to "
                 "serving replicas; the chief, the ps and the workers are killed too)")
    ->check(CLI::IsMember(
      {"wals", "word2vec", "moe", "estimator", "ctr", "serving", "online", "online-cluster"}));
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
  soak
    ->add_option("--stream-rows", so->stream_rows,
                 "online, online-cluster: rows of the stream trained on")
    ->check(CLI::Range(uint64_t{10'000}, uint64_t{1} << 40));
  soak->add_flag(
    "--no-lag-check", [so](int64_t) { so->lag_check = false; },
    "online, online-cluster: count the answers more than two sync intervals behind without failing "
    "the run (a machine too loaded to time anything)");
  soak->callback([so, &exit_code] {
    auto r = run_soak(*so);
    bool online = so->job == "online" || so->job == "online-cluster";
    if (!r) {
      exit_code = fail("soak", r.error());
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
                  : so->job == "serving" || online
                    ? " requests refused (503 or 504) and asked again"
                    : " batches replayed")
              << "\n"
              << "  messages         " << r->dropped << " dropped, " << r->delayed << " delayed\n"
              << "  quality          " << r->quality << " (clean " << r->clean_quality << ", delta "
              << r->quality_delta << ")\n"
              << "  output           "
              << (so->job == "estimator" || so->job == "ctr" || online
                    ? "asynchronous training: not comparable byte for byte"
                  : so->job == "serving" && r->bit_equal
                    ? "every answer equal to the clean run's (ids and scores)"
                  : r->bit_equal ? "equal to the clean run's, byte for byte"
                                 : "differs from the clean run's, byte for byte")
              << "\n"
              << (online
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
}

} // namespace darcy::apps
