// `darcy-bench wals`: seconds per iteration of distributed WALS (actors: chief, workers, factor
// shards in one process) with CG and with Cholesky on a synthetic Zipf matrix, the same math
// as a plain multi-threaded Eigen loop, and Last.fm-2k wall time and ranking figures against
// popularity; with --cluster, the in-process run against workers on two node processes.
// Last line: JSON {"bench":"wals","metrics":{...}}.
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <string>

namespace darcy::apps {

struct wals_bench_options {
  uint64_t rows = 1'000'000;
  uint64_t cols = 1'000'000;
  uint64_t nnz = 50'000'000;
  uint32_t dim = 64;
  uint32_t threads = 2;
  uint32_t iters = 5;
  uint32_t chol_iters = 2;
  uint32_t cg_steps = 3;
  std::string lastfm = "../shared/data/lastfm-2k/user_artists.dat";
  /// Instead: CG in process against CG with the workers on two node processes this benchmark
  /// starts (cluster_vs_local, and whether the factors are bit-identical).
  bool cluster = false;
};

caf::error run_wals_bench(const wals_bench_options& opts);

} // namespace darcy::apps
