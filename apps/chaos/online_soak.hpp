// The online-training part of `darcy-bench soak`: `darcy estimator ctr --stream` trains a DLRM
// on the generated stream and pushes each sync to `darcy serve`, whose embeddings live on shards
// on the soak's cluster, while a client asks :predict at a fixed rate. The soak SIGKILLs nodes
// and the training process (started again on the same --sync-dir, so it resumes at its last
// sync), and drops and delays messages to the shards.
#pragma once

#include <string>

#include <caf/expected.hpp>

#include "apps/chaos/soak.hpp"

namespace darcy::apps {

/// The online soak: 240,000 rows in windows of 2,000, synced every 2 s (the dense weights every
/// 4 s), served from 2 shards to a client asking 20 times a second for 8 held-out rows
/// (apps/chaos/online_watch.hpp). Besides
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
