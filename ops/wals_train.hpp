// Distributed WALS as one call: starts factor shards in this process, workers in this process
// (each on its own thread) or on the cluster's nodes, and the chief under a supervisor that
// restarts it from the last consistent checkpoint; waits for the sweeps; returns the factors.
//
//   auto data = std::make_shared<const stores::wals_dataset>(*stores::load_dataset(spec));
//   ops::wals_train_options o;
//   o.data = spec;
//   o.params.dim = 64;
//   o.checkpoint_dir = "model/checkpoints";     // resumable, and survives a chief restart
//   auto result = ops::train_wals(*session, o, data);   // result->u, result->v, result->losses
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "messages/wals/wals_values.hpp"
#include "ops/session.hpp"
#include "stores/checkpoint/matrix_file.hpp"
#include "stores/data/wals_data.hpp"

namespace darcy::ops {

/// The most factor shards a run gets without --shards. A constant, not this machine's cores, so
/// that a run resumed on another machine has the same shards.
inline constexpr uint32_t default_max_shards = 8;

struct wals_train_options {
  wals_data_spec data;
  wals_params params;
  uint32_t sweeps = 10;
  uint32_t workers = 2;
  /// Factor shards in this process; 0: one per worker, at most default_max_shards. Every
  /// block fetches from every shard, so more shards than this process's cores only add
  /// messages (the cost of a run grows with workers x shards).
  uint32_t shards = 0;
  /// Each side is cut into workers * blocks_per_worker blocks. More blocks even out the end of
  /// a phase; fewer fetch the popular rows of the other side less often.
  uint32_t blocks_per_worker = 2;
  /// Consistent checkpoints after each sweep; a run with the same data, params and layout
  /// finding one here resumes from it. Empty: none (a chief restart then starts over).
  std::string checkpoint_dir;
  int64_t token_timeout_ms = 60000;
  /// Issues of one block without a commit after which the run fails (errc::timeout), naming
  /// the block and the last good checkpoint.
  uint32_t max_token_attempts = 5;
  wals_faults faults;
  /// Cluster placement: the chief's preferred node (then every other member), and the nodes
  /// that get workers (round-robin). Empty: the first member, and all members.
  std::string chief_node;
  std::vector<std::string> worker_nodes;
  /// No word from the chief for this long fails the run with errc::timeout.
  int64_t stall_timeout_ms = 30 * 60 * 1000;
  /// Called after every phase, on the calling thread.
  std::function<void(const wals_progress&)> on_progress;
  /// On a cluster: the factor shards run on the workers' nodes (round-robin, as the workers:
  /// worker i beside shard i), not in this process, which then holds no factor. In process:
  /// ignored.
  bool shards_on_workers = false;
  /// False: the result's u and v stay empty, for a run whose factors this process should not
  /// hold twice (the shards hold them).
  bool fetch_factors = true;
  /// Rows of a side in one message between processes (remote workers' reads, the fetch of the
  /// factors); 0: 16 MiB worth (factor_view_chunk_rows).
  uint64_t view_chunk_rows = 0;
  /// Called when the supervisor restarts the chief.
  std::function<void(const std::string& node)> on_chief_restart;
};

struct wals_result {
  /// The factors (empty when !fetch_factors).
  stores::float_matrix u;
  stores::float_matrix v;
  /// Loss after each sweep (restored runs include the sweeps before the restore).
  std::vector<double> losses;
  /// The last chief's event log.
  std::vector<wals_event> events;
  uint32_t chief_restarts = 0;
  /// The workers and factor shards the run used.
  uint32_t workers = 0;
  uint32_t shards = 0;
};

/// The registry name of a run's chief (its supervisor registers it after every start).
std::string wals_chief_service(uint64_t run_id);

/// The run id of a configuration: equal options give equal ids, so a rerun resumes.
uint64_t wals_run_id(const wals_train_options& opts, const stores::wals_dataset& data);
/// The same from the matrix's shape (a "csr" directory's run, whose matrix is not loaded).
uint64_t wals_run_id(const wals_train_options& opts, uint64_t rows, uint64_t cols, uint64_t nnz);

/// Trains on `data`, which must be what opts.data loads (remote workers load it themselves);
/// `data` may be null for opts.data.format "csr", whose workers read the directory's blocks
/// (its headers give the shape).
/// Errors: errc::invalid_argument for bad params or options, errc::spawn_failed when a worker or
/// shard cannot start, errc::timeout when the chief falls silent, errc::restart_intensity_exceeded
/// when the chief keeps failing, errc::node_unreachable when every worker is down.
caf::expected<wals_result> train_wals(session& s, const wals_train_options& opts,
                                      std::shared_ptr<const stores::wals_dataset> data);

} // namespace darcy::ops
