// `darcy-bench wals --scale`: distributed WALS on a synthetic matrix too large to load whole
// (10M x 10M, 500M entries by default), its two sides written to disk once and read a block at
// a time by workers on two node processes that also hold the factor shards; the same run at
// 1M x 1M as the reference. Prints entries per core-second, their ratio (scale_vs_1m), the
// processes' peak RSS against a memory budget, checkpoint seconds and loopback bytes a sweep.
#pragma once

#include <cstdint>
#include <string>

#include <caf/error.hpp>

namespace darcy::apps {

struct wals_scale_options {
  uint64_t rows = 10'000'000;
  uint64_t cols = 10'000'000;
  uint64_t nnz = 500'000'000;
  uint64_t ref_rows = 1'000'000;
  uint64_t ref_cols = 1'000'000;
  uint64_t ref_nnz = 50'000'000;
  uint32_t dim = 64;
  uint32_t cg_steps = 3;
  uint32_t sweeps = 2;
  uint32_t blocks_per_worker = 8;
  /// Factor shards, round-robin on the two nodes (a node fetches each remote shard's rows of a
  /// side once a phase, 16 MiB a message).
  uint32_t shards = 4;
  /// Generator threads, and the cores that entries per core-second divide by.
  uint32_t threads = 2;
  /// Where the matrices' sides are written (kept for the next run) and the checkpoints go.
  std::string dir = "build/wals-scale";
  /// The most that this process and the two node processes may hold together (the sum of their
  /// peak RSS); the transposes hold a quarter of it.
  uint64_t memory_budget = uint64_t{20} << 30;
};

/// Errors of the runs; errc::invalid_argument when the processes' peaks pass the budget.
caf::error run_wals_scale(const wals_scale_options& o);

} // namespace darcy::apps
