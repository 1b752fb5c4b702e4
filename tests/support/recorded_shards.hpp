// A serving shard server that records itself as it starts, so that a test can find the shard
// servers of a version and kill one. Register recorded_shard under a name with add_actor_type
// and give that name as the root's shard factory.
#pragma once

#include <mutex>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>

#include "actors/serving/serving_shard.hpp"

namespace darcy::test {

/// The shard servers recorded_shard started, in the order they started.
inline std::mutex recorded_shards_mutex;
inline std::vector<caf::actor> recorded_shards;

inline serving_shard_actor::behavior_type recorded_shard(actors::serving_shard_pointer self,
                                                         serving_shard_config config) {
  {
    std::lock_guard<std::mutex> guard{recorded_shards_mutex};
    recorded_shards.push_back(caf::actor_cast<caf::actor>(self));
  }
  return actors::serving_shard(self, std::move(config));
}

/// Forgets the servers recorded so far (a test calls it before it starts a root).
inline void forget_recorded_shards() {
  std::lock_guard<std::mutex> guard{recorded_shards_mutex};
  recorded_shards.clear();
}

/// The servers recorded so far.
inline std::vector<caf::actor> recorded_shard_servers() {
  std::lock_guard<std::mutex> guard{recorded_shards_mutex};
  return recorded_shards;
}

} // namespace darcy::test
