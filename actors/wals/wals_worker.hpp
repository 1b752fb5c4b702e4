// The WALS worker: solves the blocks the chief hands it. For a token it reads both sides as the
// factor shards hold them (views: without a copy from shards in its own process, and through
// the node's factor_cache from the others), solves with compute/wals, writes the rows to the
// shards' pending buffers and commits the token. A worker without a token stays idle. The other
// side is fixed during a phase, so a block's solution depends only on the phase, never on which
// worker solves it, where, or how often.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>

#include "actors/wals/factor_cache.hpp"
#include "compute/sparse_matrix.hpp"
#include "messages/wals/wals_interfaces.hpp"
#include "stores/data/wals_csr.hpp"
#include "stores/data/wals_data.hpp"

namespace darcy::actors {

struct wals_worker_state {
  wals_worker_config config;
  std::vector<factor_shard_actor> shards;
  /// The matrix in memory, or (data format "csr") its two sides on disk, read a block at a time
  /// and never kept: exactly one of the two is set.
  std::shared_ptr<const stores::wals_dataset> data;
  std::optional<stores::wals_csr_sides> files;
  /// The transpose of data->matrix, shared in this process, taken on the first cols token.
  std::shared_ptr<const compute::csr_matrix> transposed;
  std::map<std::pair<wals_side, uint32_t>, std::vector<uint64_t>> partitions;
  /// A block's rows, kept for the next sweeps when in memory (the layout of a block never changes
  /// during a run). Keyed by (side, blocks, block).
  struct block_layout {
    uint64_t first = 0;
    compute::csr_matrix rows;
    /// observed_weights of rows.
    std::vector<float> weights;
  };
  std::map<std::tuple<wals_side, uint32_t, uint32_t>, std::shared_ptr<const block_layout>> layouts;
  /// Read from disk: the last block read, whose buffers the next block reuses once no job holds
  /// it.
  std::shared_ptr<block_layout> spare_layout;
  caf::actor chief;
  /// At most one block runs at a time; its solution is reused by the next unless shared.
  bool busy = false;
  /// The token received last, run or dropped; every ready names it.
  wals_token_id last_token;
  /// Shared with co-located shards while they copy it; replaced, never written, while shared.
  std::shared_ptr<std::vector<float>> solution;
  /// Per shard: it runs in this process, so views cost nothing and it takes whole blocks.
  std::vector<bool> co_located;
  /// The other shards' rows, shared with this run's other workers in this process.
  std::shared_ptr<factor_cache> cache;
  static inline const char* name = "darcy.wals_worker";
};

using wals_worker_pointer = wals_worker_actor::stateful_pointer<wals_worker_state>;

/// A worker over an already loaded dataset (in-process runs share one); with a null `data`,
/// over config.data's "csr" directory, opened as it starts (an error ends the worker).
wals_worker_actor::behavior_type wals_worker(wals_worker_pointer self, wals_worker_config config,
                                             std::vector<factor_shard_actor> shards,
                                             std::shared_ptr<const stores::wals_dataset> data);

/// The spawnable form ("darcy.wals_worker"): loads config.data on a thread of its own (of a
/// "csr" directory only its row offsets), holding its messages until the load ends; a load
/// error is printed and the worker exits with it.
wals_worker_actor::behavior_type wals_worker_loading(wals_worker_pointer self,
                                                     wals_worker_config config,
                                                     std::vector<factor_shard_actor> shards);

} // namespace darcy::actors
