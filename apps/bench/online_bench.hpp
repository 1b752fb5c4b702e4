// `darcy-bench online`: online training followed by serving. A DLRM trains on a drifting
// generated stream in this process and syncs its changed rows (and, less often, its dense
// weights) to a `darcy serve` whose embeddings live on shards on 2 node processes, while a
// client asks :predict at a fixed rate for the rows of the window being trained on. The peer is
// the same model exported once at the start, never synced. Last line: JSON
// {"bench":"online","metrics":{...},"timeline":[...]}.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/error.hpp>

#include "ops/online/sync_push.hpp"

namespace darcy::apps {

struct online_bench_options {
  /// Work folder (emptied first): the exports, the sync chain and the processes' logs.
  std::string dir = "/tmp/darcy-online-bench";
  /// Seconds of training with the client asking (after the first window and serve's start).
  double seconds = 600;
  std::chrono::milliseconds sync_every{2000};
  std::chrono::milliseconds dense_sync_every{10000};
  /// What each push carries: the rows serving lacks, or the sync folder's path.
  ops::online::push_mode push = ops::online::push_mode::rows;
  uint64_t window_rows = 5000;
  /// The client's fixed rate, and the instances of each request.
  double qps = 50;
  size_t instances = 8;
  /// The stream: the teacher's half redrawn every drift_rows rows, fresh ids, capped fields.
  uint64_t drift_rows = 500'000;
  double fresh_rate = 0.01;
  double fresh_step = 0;
  uint64_t max_ids = 100'000;
  /// Threads of the trainer's products.
  size_t threads = 2;
  uint64_t seed = 1;
  bool quiet = false;
  /// --cluster (online_cluster.hpp): the job's batch, the memory budget of each ps's tables
  /// (the one-process run gets the two ps's together), the seconds the one-process run is
  /// measured, and a full sync after this many deltas.
  bool cluster = false;
  uint64_t batch = 256;
  uint64_t memory_budget = uint64_t{1} << 20;
  double local_seconds = 60;
  uint32_t full_every = 30;
};

/// Runs the benchmark and prints its lines; fails with the first error of the trainer or of a
/// process it started (with that process's log).
caf::error run_online_bench(const online_bench_options& o);

} // namespace darcy::apps
