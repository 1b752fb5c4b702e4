// The online-cluster part of `darcy-bench soak`: the stream as a distributed job (a chief, a ps
// and 2 workers, processes of their own, the tables in LevelDB on the ps behind a memory budget
// smaller than their rows) pushes each sync's rows in messages to `darcy serve --replicas 2`,
// whose copies live on the soak's cluster, while a client asks :predict. The soak SIGKILLs the
// chief, the ps, the workers and serving nodes, and drops and delays messages on both clusters.
#pragma once

#include <string>

#include <caf/expected.hpp>

#include "apps/chaos/soak.hpp"

namespace darcy::apps {

/// The online-cluster soak: o.stream_rows rows of the generated stream (1 worker step: 256
/// rows), synced every 2 s (the dense weights every 4 s) to `darcy serve --embedding-shards 1
/// --replicas 2` on o.nodes nodes (at least 3), whose copies keep the pushed syncs in folders of
/// their own; the client and the verdict are online_watch's. Besides o.kills serving node kills,
/// training is killed o.kills times at seeded times of its clean run, the victims in a seeded
/// order of the chief, the ps and a worker (each once in three kills): a killed ps or worker
/// starts again once the chief lists it down, and after the chief (whose ps and workers end
/// then) the whole job starts again and goes on from its last sync; each kill of the chief or
/// the ps must be followed by such a resume (the chief's message says so), or the run fails.
/// A share o.drop of the messages to the job's actors and to serving's shards is dropped,
/// o.delay delayed.
/// errc::invalid_config for fewer than 3 nodes; errc::io_error when the clean run fails.
caf::expected<soak_result> run_online_cluster_soak(const soak_options& o,
                                                   const std::string& binary);

} // namespace darcy::apps
