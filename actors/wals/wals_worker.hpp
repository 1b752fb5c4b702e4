// The WALS worker: solves the blocks the chief hands it. For a token it reads the other
// side's rows its block uses (and, for CG, its own rows as the warm start) from the factor
// shards, through a view for shards in its own process and by fetch for the others, solves with
// compute/wals, writes the rows to the shards' pending buffers and commits the token. A worker without a token stays idle. The other side is fixed during a phase, so a
// block's solution depends only on the phase, never on which worker solves it or how often.
#pragma once

#include <map>
#include <tuple>
#include <memory>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>

#include "compute/sparse_matrix.hpp"
#include "messages/wals/wals_interfaces.hpp"
#include "stores/wals_data.hpp"

namespace darcy::actors {

struct wals_worker_state {
  wals_worker_config config;
  std::vector<factor_shard_actor> shards;
  std::shared_ptr<const stores::wals_dataset> data;
  /// The transpose of data->matrix, built on the first cols token.
  std::unique_ptr<compute::csr_matrix> transposed;
  std::map<std::pair<wals_side, uint32_t>, std::vector<uint64_t>> partitions;
  /// A block's rows, kept for the next sweeps (the layout of a block never changes during a
  /// run). Unless in_place, their columns are mapped to slots of the other side's rows they
  /// read. Keyed by (side, blocks, block).
  struct block_layout {
    uint64_t first = 0;
    compute::csr_matrix rows;
    /// observed_weights of rows.
    std::vector<float> weights;
    /// Per shard, the other side's ids the block reads, ascending; shard s's fill slots
    /// base[s] .. base[s + 1]. Empty in place.
    std::vector<std::vector<uint32_t>> other_ids;
    std::vector<uint64_t> base;
    /// Per shard, the block's own ids it owns, ascending.
    std::vector<std::vector<uint32_t>> own_ids;
  };
  std::map<std::tuple<wals_side, uint32_t, uint32_t>, std::shared_ptr<const block_layout>> layouts;
  caf::actor chief;
  /// At most one block runs at a time; these buffers serve it and are reused by the next.
  bool busy = false;
  std::vector<float> other_rows;
  /// Shared with co-located shards while they copy it; replaced, never written, while shared.
  std::shared_ptr<std::vector<float>> solution;
  /// Per shard: it runs in this process, so it is read through view.
  std::vector<bool> co_located;
  /// Every shard is co-located: blocks keep their column ids and the solve reads the other
  /// side in the shards' buffers (no slots, no gathered copy).
  bool in_place = false;
  /// Global id of the other side -> its row in the fetched block; UINT32_MAX when absent.
  std::vector<uint32_t> slot;
  static inline const char* name = "darcy.wals_worker";
};

using wals_worker_pointer = wals_worker_actor::stateful_pointer<wals_worker_state>;

/// A worker over an already loaded dataset (in-process runs share one).
wals_worker_actor::behavior_type wals_worker(wals_worker_pointer self, wals_worker_config config,
                                             std::vector<factor_shard_actor> shards,
                                             std::shared_ptr<const stores::wals_dataset> data);

/// The spawnable form ("darcy.wals_worker"): loads config.data itself; a load error is printed
/// and the worker exits with it.
wals_worker_actor::behavior_type wals_worker_loading(wals_worker_pointer self,
                                                     wals_worker_config config,
                                                     std::vector<factor_shard_actor> shards);

} // namespace darcy::actors
