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
#include <caf/typed_response_promise.hpp>

#include "actors/embedding/shard_tables.hpp"
#include "actors/request_window.hpp"
#include "messages/embedding/embedding_interfaces.hpp"
#include "runtime/http/service_metrics.hpp"
#include "runtime/metrics.hpp"
#include "stores/embedding/embedding_store.hpp"

namespace darcy::actors {

struct embedding_shard_state {
  using table = shard_table;
  /// This shard's number in its service; a persistent backend keeps its rows in
  /// config.path/shard-<index>, so that a restarted shard finds them again.
  uint32_t index = 0;
  /// Every handler holds shared->mutex: the direct path may use the tables at the same time.
  shard_tables_ptr shared;
  std::map<std::string, table>& tables() { return shared->tables; }
  /// Ids of the updates and loads applied lately.
  request_window applied;
  /// Syncs (apply_part) being read, by request id: the read (done once its reader sends the
  /// request again, anonymously) and the answers the request and its repeats wait for.
  struct sync_read;
  struct applying_sync {
    std::shared_ptr<sync_read> read;
    std::vector<caf::typed_response_promise<ok_atom>> waiting;
  };
  std::map<uint64_t, applying_sync> applying;
  /// Checkpoint loads (load_part) of memory tables being built aside, by request id: the load
  /// (done once its loader sends the request again, anonymously) and the answers it owes.
  struct table_load;
  struct loading_tables {
    std::shared_ptr<table_load> load;
    std::vector<caf::typed_response_promise<ok_atom>> waiting;
  };
  std::map<uint64_t, loading_tables> loading;
  /// The load begun last: only its tables are swapped in (a later load supersedes a pending
  /// one, whose files may be older).
  uint64_t newest_load = 0;
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
  /// Requests and latency by operation; the store sizes are read at scrape time.
  std::unique_ptr<runtime::service_metrics> metrics;
  /// The background refresher of the tables' ANN indexes, once a table keeps one.
  caf::actor ann_refresher;
  runtime::metrics_registry::collector_handle sizes;
  static inline const char* name = "darcy.embedding_shard";
};

embedding_shard_actor::behavior_type embedding_shard(
  embedding_shard_actor::stateful_pointer<embedding_shard_state> self, uint32_t index);

/// The same, over tables that others in this process may share (see direct_embedding).
embedding_shard_actor::behavior_type embedding_shard_over(
  embedding_shard_actor::stateful_pointer<embedding_shard_state> self, uint32_t index,
  shard_tables_ptr tables);

/// Spawns shards 0..count-1 in `sys`.
std::vector<embedding_shard_actor> spawn_shards(caf::actor_system& sys, size_t count);

/// Shards in this process with their tables, for the direct path.
struct local_shards {
  std::vector<embedding_shard_actor> actors;
  std::vector<shard_tables_ptr> tables;
};

/// Spawns shards 0..count-1 in `sys`, keeping their tables.
local_shards spawn_local_shards(caf::actor_system& sys, size_t count);

} // namespace darcy::actors
