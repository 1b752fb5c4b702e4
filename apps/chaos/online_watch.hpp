// What the online soaks (apps/chaos/online_soak.hpp, online_cluster_soak.hpp) watch: the syncs
// training writes to its folder, a client asking `darcy serve`'s :predict for held-out rows and
// the sync each answer names, the served model's AUC once training has ended, and the verdict:
// never a sync training had not written, never one stale past two sync intervals.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "apps/chaos/soak.hpp"
#include "ops/estimator/input.hpp"

namespace darcy::apps {

/// The model both online soaks serve, the stream's ids a field, and its sync periods.
inline constexpr const char* online_model = "ctr";
inline constexpr uint64_t online_max_ids = 20'000;
inline constexpr double online_sync_every_s = 2;
inline constexpr double online_dense_sync_every_s = 4;

/// The flags of `darcy estimator ctr --stream` that make training in DIR sync every
/// online_sync_every_s (the dense weights every online_dense_sync_every_s) to DIR/sync, export
/// once to DIR/exports/ctr and push each sync to `darcy serve` on 127.0.0.1:`port`.
std::vector<std::string> online_sync_flags(const std::string& dir, uint16_t port);

/// A sync as the soak saw training write it: its checkpoint, step, and when it was first seen.
struct online_sync_seen {
  std::string checkpoint;
  int64_t step = 0;
  std::chrono::steady_clock::time_point seen;
};

/// An answer of :predict: when it came, and the sync it names (empty: the export, no sync yet).
struct online_answer {
  std::chrono::steady_clock::time_point at;
  std::string checkpoint;
  int64_t step = -1;
};

struct online_verdict {
  /// Answers naming a sync that training had not written by then, within `slack`, or with
  /// another step than training wrote for it.
  uint64_t ahead = 0;
  /// From the first answer after the last kill that names the newest sync (caught_up_s after
  /// that kill; none: no such answer), the answers whose sync was older than the newest by
  /// more than two intervals, and the largest lag: how long a newer sync had been written.
  std::optional<double> caught_up_s;
  uint64_t stale = 0;
  double stale_max_s = 0;
};

/// The online soak's checks. `syncs` are in the order training wrote them, `answers` in the
/// order they came; `kills` may be empty (the clean run: caught up from the first answer that
/// names the newest sync).
online_verdict judge_online_answers(const std::vector<online_sync_seen>& syncs,
                                    const std::vector<online_answer>& answers,
                                    const std::vector<std::chrono::steady_clock::time_point>& kills,
                                    std::chrono::duration<double> sync_every,
                                    std::chrono::steady_clock::duration slack);

/// What one run saw; the client, the driver and the soak's loop share it.
struct online_run {
  std::mutex mutex;
  std::vector<online_answer> answers;
  std::vector<online_sync_seen> syncs;
  std::vector<std::chrono::steady_clock::time_point> training_kills;
  std::atomic<uint64_t> asked_again{0};
  std::atomic<bool> stop{false};
  std::string failure;
  /// What training and `darcy serve` wrote to stderr, for a failure's report.
  std::string training_log, serve_log;
  double probe_auc = 0;
  /// When the job started (run_chaos's clock starts with it), serving began and training ended.
  std::chrono::steady_clock::time_point begun{};
  std::chrono::steady_clock::time_point serving_began{};
  std::chrono::steady_clock::time_point training_ended{};

  /// Keeps the first failure, and stops the run.
  void fail(const std::string& why);
};

/// The rows the client asks, and those the served model is scored on at the end: the 2,000
/// rows that follow the stream's first `stream_rows`, from the same generator.
struct online_probe {
  ops::estimator::example_table table;
  /// :predict bodies of 8 rows, asked in turn, and of 100 rows, for the score.
  std::vector<std::string> client_bodies;
  std::vector<std::string> score_bodies;
};
caf::expected<online_probe> make_online_probe(uint64_t seed, uint64_t stream_rows);

/// Asks :predict 20 times a second for one of probe's client bodies in turn, a refused request
/// again after 20 ms (counted in run.asked_again, failing the run after 60 s), and records the
/// sync each answer names, until run.stop.
void run_online_client(uint16_t port, const online_probe& probe, online_run& run);

/// Records the newest checkpoint of `sync_dir` when it is new. An answer may name a sync up to
/// two of the caller's polls (online_poll apart) before this saw it written.
inline constexpr std::chrono::milliseconds online_poll{50};
void record_sync(const std::string& sync_dir, online_run& run);

/// After training ended: waits up to 60 s for serving to reach the newest sync of `sync_dir`,
/// then scores the probe's rows with the served model into run.probe_auc, and stops the run
/// (a failure when serving stayed behind or refused the rows).
void finish_online_run(const std::string& sync_dir, uint16_t port, const online_probe& probe,
                       online_run& run);

/// Fills r's ahead_answers, stale_answers, stale_max_s and caught_up_s from what `run` saw, and
/// run.failure when a check fails (the lag's only with `lag_check`); `kills` are the times of
/// every kill.
void judge_online_run(online_run& run,
                      const std::vector<std::chrono::steady_clock::time_point>& kills,
                      bool lag_check, soak_result& r);

/// A run of online training under watch: it exports once to DIR/exports/ctr, writes its syncs
/// to sync_dir and pushes each to `darcy serve` on the run's port.
struct online_job {
  /// Starts training; returns once the export that serving starts from is written.
  std::function<caf::error(online_run&)> start;
  /// Keeps training going to its end, killing it at its times (each in run.training_kills):
  /// records its syncs every online_poll, keeps run.training_log, sets run.training_ended.
  /// Returns early on run.stop, or after run.fail.
  std::function<void(online_run&)> drive;
  /// Ends what is left of training.
  std::function<void()> stop;
  std::string sync_dir;
  /// `darcy serve`'s flags besides --exports and --listen.
  std::vector<std::string> serve_flags;
  /// Adds what training's own disruption did to a soaked run's result (its messages dropped
  /// and delayed); may be empty.
  std::function<void(soak_result&)> report;
};

/// The job of one run: its folder, serving's port, and the seconds after serving began at which
/// training is to be killed (none for the clean run).
using online_job_maker = std::function<online_job(const std::string& dir, uint16_t port,
                                                  const std::vector<double>& kills_s)>;

/// An online soak: a clean run of `make`'s job, then a soaked one (run_chaos on a soak cluster
/// of its own, serving's embeddings on its nodes), whose training is killed o.kills times at
/// seeded times within 20-70% of the clean run's training. The client asks serving throughout;
/// judge_online_run decides. lost_work counts the requests refused and asked again; the quality
/// is the served model's AUC on the probe rows. errc::io_error when the clean run fails.
caf::expected<soak_result> run_online_soaks(const soak_options& o, const std::string& binary,
                                            const online_job_maker& make);

/// The last `n` characters of `text`.
std::string last_chars(const std::string& text, size_t n = 1500);
/// The line of `text` that holds the character at `at` (< text.size()), without its newline.
std::string line_at(const std::string& text, size_t at);
/// The last line of `text` that holds `needle`, at most its last 500 characters (empty: none).
std::string last_line_with(const std::string& text, std::string_view needle);

} // namespace darcy::apps
