// `darcy-bench online --cluster`: the online loop across machines. A distributed
// `darcy estimator ctr --stream` job (a chief, 2 workers, 2 ps with the tables in LevelDB behind
// a memory budget smaller than their rows) pushes each sync's rows to a `darcy serve` whose
// embeddings live on 4 node processes, 2 shards × 2 replicas; every process runs in a network
// namespace of its own, and one serving node is SIGKILLed half way. Before it, the same model
// trains on the same stream in one process, for cluster_online_vs_local. Needs root and `ip`.
#pragma once

#include <caf/error.hpp>

#include "apps/bench/online_bench.hpp"

namespace darcy::apps {

/// Runs the cluster mode of the online benchmark and prints its lines; fails with the first
/// error of a process it started (with that process's log).
caf::error run_online_cluster_bench(const online_bench_options& o);

} // namespace darcy::apps
