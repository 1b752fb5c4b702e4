// The online-training part of `darcy-bench soak`: `darcy estimator ctr --stream` trains a DLRM
// on the generated stream and pushes each sync to `darcy serve`, whose embeddings live on shards
// on the soak's cluster, while a client asks :predict at a fixed rate. The soak SIGKILLs nodes
// and the training process (started again on the same --sync-dir, so it resumes at its last
// sync), and drops and delays messages to the shards.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "apps/chaos/soak.hpp"

namespace darcy::apps {

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

/// The online soak: 240,000 rows in windows of 2,000, synced every 2 s (the dense weights every
/// 4 s), served from 2 shards to a client asking 20 times a second for 8 held-out rows. Besides
/// o.kills node kills, the training process is SIGKILLed o.kills times, at seeded times of its
/// clean run, and started again at once. A served sync is read from each answer: it must be one
/// that training had written by then (soak_result::ahead_answers), and once serving has caught
/// up after the last kill, no older than the newest by more than two intervals
/// (stale_answers; counted without failing the run when !o.lag_check). At the stream's end
/// serving must reach training's last sync. lost_work
/// counts the requests refused (503 or 504) and asked again; the quality is the AUC of the last
/// served model on 2,000 rows that follow the stream. errc::io_error when the clean run fails.
caf::expected<soak_result> run_online_soak(const soak_options& o, const std::string& binary);

} // namespace darcy::apps
