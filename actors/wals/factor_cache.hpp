// A node's copies of the rows that remote factor shards hold, shared by the WALS workers of one
// run in this process: each side of each shard crosses the network once per version (a phase's
// output, fetched by the first block that reads it), not once per block.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "messages/wals/wals_interfaces.hpp"

namespace darcy::actors {

class factor_cache {
public:
  explicit factor_cache(size_t shards) : entries_(shards) {}

  /// The cache of the run whose shards are `shards`, shared with the other workers of that run
  /// in this process while any of them holds it.
  static std::shared_ptr<factor_cache> of(const std::vector<factor_shard_actor>& shards);

  /// What this process holds of shard `shard`'s `side`: version 0 and no rows when nothing.
  factor_snapshot get(size_t shard, wals_side side) const;

  /// Keeps `view` unless a version as new is held already.
  void put(size_t shard, wals_side side, factor_snapshot view);

private:
  mutable std::mutex mutex_;
  std::vector<std::array<factor_snapshot, 2>> entries_;
};

} // namespace darcy::actors
