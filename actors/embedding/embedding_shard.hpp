// The embedding shard: owns, for every embedding, the rows whose key hash falls on this shard,
// and runs lookups and in-shard optimizer updates on them. Behaviour only: the rows and the
// math live in stores/ and compute/.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "actors/request_window.hpp"
#include "messages/embedding/embedding_interfaces.hpp"
#include "stores/embedding_store.hpp"

namespace darcy::actors {

struct embedding_shard_state {
  struct table {
    de_config config;
    std::unique_ptr<stores::embedding_store> store;
  };
  /// This shard's number in its service; a persistent backend keeps its rows in
  /// config.path/shard-<index>, so that a restarted shard finds them again.
  uint32_t index = 0;
  std::map<std::string, table> tables;
  /// Ids of the updates and loads applied lately.
  request_window applied;
  /// Keys of lookups that backward will name, oldest first; at most max_pending_lookups of
  /// them and max_pending_bytes of keys.
  struct pending_lookup {
    uint64_t handle = 0;
    std::vector<table_keys> tables;
    size_t bytes = 0;
  };
  std::deque<pending_lookup> pending;
  size_t pending_bytes = 0;
  static constexpr size_t max_pending_bytes = size_t{64} << 20;
  /// The answers of the last saves, by "dir/id", newest last.
  std::deque<std::pair<std::string, std::vector<checkpoint_embedding>>> saved;
  static inline const char* name = "darcy.embedding_shard";
};

embedding_shard_actor::behavior_type
embedding_shard(embedding_shard_actor::stateful_pointer<embedding_shard_state> self,
                uint32_t index);

/// Spawns shards 0..count-1 in `sys`.
std::vector<embedding_shard_actor> spawn_shards(caf::actor_system& sys, size_t count);

} // namespace darcy::actors
