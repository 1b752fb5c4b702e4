// Values of distributed WALS (the seed's Algorithm 1) that cross actor and node boundaries:
// the solve's hyper-parameters, where the data comes from, run tokens and their commits, and
// the configuration of the chief, the workers and the factor shards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace darcy {

/// f in the observed weight w = 1 + alpha * f(value).
enum class wals_weight_fn : uint8_t { identity = 0, log1p = 1 };

enum class wals_solver : uint8_t { cg = 0, cholesky = 1 };

/// The two sides of the factorization. rows: U (one row per matrix row); cols: V.
enum class wals_side : uint8_t { rows = 0, cols = 1 };

std::string to_string(wals_weight_fn x);
std::string to_string(wals_solver x);
std::string to_string(wals_side x);

/// The side a phase of `side` reads.
inline wals_side opposite(wals_side side) {
  return side == wals_side::rows ? wals_side::cols : wals_side::rows;
}

struct wals_params {
  uint32_t dim = 64;
  float alpha = 1.0f;
  wals_weight_fn weight_fn = wals_weight_fn::log1p;
  /// Weight of every unobserved entry (target 0), applied through the Gramian.
  float sigma = 0.5f;
  float lambda = 0.1f;
  wals_solver solver = wals_solver::cg;
  /// Conjugate-gradient steps per row and half-sweep, warm-started from the current row.
  uint32_t cg_steps = 3;
  /// Scale of the deterministic initial factors: uniform in [-init_scale, init_scale) / sqrt(dim).
  float init_scale = 0.1f;
  uint64_t seed = 1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_params& x) {
  return f(x.dim, x.alpha, x.weight_fn, x.sigma, x.lambda, x.solver, x.cg_steps, x.init_scale,
           x.seed);
}

/// Where a worker finds the matrix. Every process that loads the same spec builds the same
/// matrix with the same id maps, so only the spec crosses the network.
struct wals_data_spec {
  /// "tsv", "csv" or "lastfm" (tab-separated, no header); "csr" for a directory that
  /// stores/data/wals_csr wrote (its workers read one block's rows at a time); empty when
  /// synthetic.
  std::string format;
  std::string path;
  /// Optional "row<TAB>feature" and "col<TAB>feature" lists (lines whose first field is not an
  /// id of the matrix, such as a header, are skipped); they become extra columns and rows.
  std::string row_features;
  std::string col_features;
  float feature_value = 1.0f;
  /// Skip and count malformed lines instead of failing on the first.
  bool skip_malformed = false;
  /// Synthetic matrix (format empty): rows x cols with about nnz entries.
  uint64_t rows = 0;
  uint64_t cols = 0;
  uint64_t nnz = 0;
  uint64_t seed = 1;
  /// Held-out evaluation: drop this fraction of each row's entries (seeded) before training.
  float holdout = 0;
  uint64_t holdout_seed = 1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_data_spec& x) {
  return f(x.format, x.path, x.row_features, x.col_features, x.feature_value, x.skip_malformed,
           x.rows, x.cols, x.nnz, x.seed, x.holdout, x.holdout_seed);
}

/// The right to solve one block of one side in one phase. `epoch` names the phase of one chief
/// incarnation; factor shards accept writes of the current epoch only.
struct wals_token {
  uint64_t epoch = 0;
  uint32_t sweep = 0;
  wals_side side = wals_side::rows;
  uint32_t block = 0;
  /// The side is cut into this many blocks by compute::balanced_blocks.
  uint32_t blocks = 1;
  /// 0 for the first issue of this block in this phase, then 1, 2, ... on re-issue.
  uint32_t attempt = 0;
  /// The other side's Gramian, dim x dim, row-major.
  std::vector<float> gramian;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_token& x) {
  return f(x.epoch, x.sweep, x.side, x.block, x.blocks, x.attempt, x.gramian);
}

/// Which token a worker received last (epoch 0: none yet). A worker's ready names it, so that
/// the chief tells a ready sent after the worker dropped its token (abandoned: re-issue it)
/// from one sent before the token reached it (stale: the token is on its way).
struct wals_token_id {
  uint64_t epoch = 0;
  uint32_t block = 0;
  uint32_t attempt = 0;

  friend bool operator==(const wals_token_id&, const wals_token_id&) = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_token_id& x) {
  return f(x.epoch, x.block, x.attempt);
}

/// A worker's report that its token's rows are written. For a cols block, `observed_loss` is
/// the block's observed part of the loss at the new factors.
struct wals_commit {
  uint64_t epoch = 0;
  uint32_t block = 0;
  uint32_t attempt = 0;
  uint64_t rows = 0;
  uint64_t entries = 0;
  double observed_loss = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_commit& x) {
  return f(x.epoch, x.block, x.attempt, x.rows, x.entries, x.observed_loss);
}

/// Test-only fault injection. drop_block: the worker that receives the first issue of this block
/// in sweep `drop_sweep` writes half of its rows, then goes silent (the token must time out or its
/// node die). stall_sweep: a chief that did not restore from a checkpoint stops handing out
/// tokens when the cols phase of this sweep starts: U is updated but not yet checkpointed.
/// Both write getpid() to `pid_file` when they fire. fail_block: from sweep `drop_sweep` on,
/// every worker abandons every issue of this rows block, as a worker does whose solve is not
/// finite.
struct wals_faults {
  int32_t drop_block = -1;
  uint32_t drop_sweep = 0;
  int32_t stall_sweep = -1;
  std::string pid_file;
  int32_t fail_block = -1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_faults& x) {
  return f(x.drop_block, x.drop_sweep, x.stall_sweep, x.pid_file, x.fail_block);
}

struct wals_shard_config {
  uint32_t index = 0;
  uint32_t count = 1;
  uint64_t rows = 0;
  uint64_t cols = 0;
  wals_params params;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_shard_config& x) {
  return f(x.index, x.count, x.rows, x.cols, x.params);
}

struct wals_worker_config {
  wals_data_spec data;
  wals_params params;
  wals_faults faults;
  /// Rows of a remote shard's side in one view message; 0: factor_view_chunk_rows(params.dim).
  uint64_t view_chunk_rows = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_worker_config& x) {
  return f(x.data, x.params, x.faults, x.view_chunk_rows);
}

/// Progress the chief reports to its listener, once per committed phase.
struct wals_progress {
  uint32_t sweep = 0;
  wals_side side = wals_side::rows;
  uint32_t sweeps = 0;
  uint64_t rows = 0;
  uint64_t entries = 0;
  /// Loss after the phase when known (cols phases), else NaN.
  double loss = 0;
  bool restored = false;
  bool done = false;
  /// Set when the run cannot go on: which block failed how often, and the last good checkpoint.
  std::string failure;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_progress& x) {
  return f(x.sweep, x.side, x.sweeps, x.rows, x.entries, x.loss, x.restored, x.done, x.failure);
}

/// One line of the chief's event log: what happened to which block in which phase.
struct wals_event {
  /// "phase", "issue", "reissue", "commit", "checkpoint", "restore", "done".
  std::string what;
  uint32_t sweep = 0;
  wals_side side = wals_side::rows;
  uint32_t block = 0;
  uint32_t attempt = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_event& x) {
  return f(x.what, x.sweep, x.side, x.block, x.attempt);
}

} // namespace darcy
