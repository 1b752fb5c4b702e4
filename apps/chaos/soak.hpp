// `darcy-bench soak`: a seeded random-kill soak. A job runs on a local cluster of `darcy node`
// processes started with --chaos, while a seeded killer SIGKILLs non-seed nodes at random times
// (a replacement joins after each kill) and every actor the nodes spawn for the job drops and
// delays a seeded fraction of the messages sent to it (the nodes' chaos gates). The run is compared
// with a clean run of the same seed on a cluster left alone.
//
//   auto r = run_soak({.job = "wals", .kills = 3, .drop = 0.01, .delay = 0.01, .seed = 7});
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "messages/cluster/chaos_messages.hpp"
#include "messages/cluster/membership.hpp"
#include "ops/session.hpp"
#include "ops/testing/local_cluster.hpp"

namespace darcy::apps {

struct soak_options {
  /// "wals", "word2vec", "moe", "estimator" or "ctr" (apps/chaos/estimator_soak.hpp), "serving"
  /// (apps/chaos/serving_soak.hpp), "online" (apps/chaos/online_soak.hpp) or "online-cluster"
  /// (apps/chaos/online_cluster_soak.hpp).
  std::string job = "wals";
  uint32_t kills = 3;
  /// Fractions of the messages to every spawned actor dropped and delayed (by delay_ms).
  double drop = 0.01;
  double delay = 0.01;
  int64_t delay_ms = 20;
  uint64_t seed = 1;
  /// Nodes of the cluster, the seed included; the seed is never killed. The Estimator's are
  /// its chief (the seed), one ps and nodes - 2 workers; its evaluator comes on top.
  size_t nodes = 4;
  /// Where the runs' inputs, outputs and the nodes' state go (emptied first).
  std::string dir = "build/soak";
  /// The `darcy` binary the nodes and the job run; empty: the one beside this executable.
  std::string binary;
  /// A soaked run still going after this long (0: 10 clean runs, at least 300 s) failed.
  double timeout_s = 0;
  bool quiet = false;
  /// The online jobs: fail a run whose served syncs lag by more than two intervals (false:
  /// only count them, for a machine too loaded to time anything, as under `make test`).
  bool lag_check = true;
  /// The online jobs' stream: the rows training reads before the held-out ones.
  uint64_t stream_rows = 240'000;
};

struct soak_result {
  bool completed = false;
  uint32_t kills = 0;
  /// Services of killed nodes started again elsewhere; for online-cluster, the training
  /// processes started again too (a killed task, every task of a job whose chief was killed).
  uint32_t restarts = 0;
  /// From each kill until every service of the killed node was up elsewhere and its
  /// replacement had joined.
  double recover_p50_s = 0;
  double recover_max_s = 0;
  /// Work done twice: word2vec batches and MoE steps replayed from a checkpoint, WALS blocks
  /// issued again; for the Estimator, the worker steps lost in flight (at most one per killed
  /// worker) and the global steps replayed from a checkpoint after a killed ps; for serving,
  /// the requests asked again.
  uint64_t lost_work = 0;
  /// The job's quality under chaos minus the clean run's: word2vec, the share of words whose
  /// nearest neighbour is of their topic; WALS and MoE, the relative change of the final loss;
  /// the Estimator, the relative change of the mean test accuracy of the checkpoints of the
  /// last 500 global steps.
  double quality = 0;
  double clean_quality = 0;
  double quality_delta = 0;
  /// The output files equal the clean run's byte for byte (MoE: its final loss, exactly).
  bool bit_equal = false;
  /// Messages the disrupted services dropped and delayed.
  uint64_t dropped = 0;
  uint64_t delayed = 0;
  double clean_seconds = 0;
  double seconds = 0;
  /// When each node was killed, in seconds from the soak's start.
  std::vector<double> kill_at_s;
  /// Online training (apps/chaos/online_watch.hpp): training's kills (the process's, or the
  /// chief's, a ps's and a worker's); the
  /// answers that served a sync training had not written by then (must be none); once serving
  /// has caught up after the last kill, the answers that served a sync older than the newest by
  /// more than two sync intervals (must be none) and the largest such lag; and how long after
  /// the last kill serving first answered with the newest sync.
  uint32_t training_kills = 0;
  uint64_t ahead_answers = 0;
  uint64_t stale_answers = 0;
  double stale_max_s = 0;
  double caught_up_s = 0;
  /// Why the run did not complete, if it did not.
  std::string failure;
};

/// The seeded times of a soak's kills, in seconds from its start: o.kills draws within
/// [from, to] of the clean run's duration (20–80% by default), in order.
std::vector<double> kill_times(const soak_options& o, double clean_seconds, std::mt19937_64& rng,
                               double from = 0.2, double to = 0.8);

/// Prints "soak: LINE" to stderr unless o.quiet.
void soak_log(const soak_options& o, const std::string& line);

/// How long a soaked run may last: o.timeout_s, or 10 clean runs and at least 300 s.
double soak_deadline_s(const soak_options& o, double clean_seconds);

/// Fills r's recover_p50_s and recover_max_s from the recovery times, and its dropped and
/// delayed counts from the nodes' counts.
void summarize(soak_result& r, std::vector<double> recover_s,
               const std::map<std::string, chaos_stats>& counts);

/// One poll of a soak's disruption: disrupts with `plan` every member of `st` that is up and not
/// in `disrupted` (adding it), and reads the counts of the others into counts["NAME@JOINED_MS"],
/// keeping the highest: counts fall when a node's gates end with the job.
void disrupt_members(ops::session& client, const cluster_status& st, const disruption& plan,
                     std::set<std::string>& disrupted, std::map<std::string, chaos_stats>& counts);

/// A job under the soak, as its kill loop sees it.
struct soak_job {
  /// The job's exit code once it has ended, waiting at most the given time; an error while it
  /// runs.
  std::function<caf::expected<int>(std::chrono::milliseconds)> wait;
  /// Where it stood and its last messages, for the report of a run that did not end in time,
  /// which keeps the last 8,000 characters.
  std::function<std::string()> last_messages;
  /// Ends it at once.
  std::function<void()> kill;
};

/// A local cluster of o.nodes `darcy node` processes started with --chaos.
caf::expected<std::unique_ptr<testing::local_cluster>> start_soak_cluster(
  const soak_options& o, const std::string& binary);

/// The soak on `nodes`: disrupts every node, starts the job with start_job(), SIGKILLs a
/// random non-seed node at each of kill_times (a replacement joins after each), and disrupts
/// every member that joins, until the job ends or soak_deadline_s passes (the job is then
/// killed and result.failure says why). Fills result's kills, restarts, recovery times,
/// counts and seconds. Answers the job's exit code, none past the deadline; an error when the
/// soak's client or the job cannot start.
caf::expected<std::optional<int>> run_chaos(
  const soak_options& o, testing::local_cluster& nodes, double clean_seconds,
  const std::function<caf::expected<soak_job>()>& start_job, soak_result& result);

/// Runs the clean run and the soak. errc::invalid_config for an unknown job, fewer than 2
/// nodes, or fractions outside [0, 1]; errc::io_error when the clean run itself fails. A soak
/// run that fails is a result with completed false, not an error.
caf::expected<soak_result> run_soak(const soak_options& o);

/// The final line's metrics: completed, kills, restarts, recover_p50_s, recover_max_s,
/// lost_work, quality_delta and bit_equal (asked of WALS; word2vec, run on one thread, is
/// deterministic too; not given for the Estimator, whose training is asynchronous), and for
/// the online jobs training_kills, ahead_answers, stale_answers, stale_max_s and caught_up_s.
nlohmann::json soak_metrics(const soak_options& o, const soak_result& r);

} // namespace darcy::apps
