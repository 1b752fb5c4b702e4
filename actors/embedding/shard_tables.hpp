// One embedding shard's tables: for each embedding its config and the store of the rows that
// hash to the shard. The shard actor owns them, and trainers in the shard's process may reach
// them directly (direct_embedding); everyone holds `mutex` for every access.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "actors/embedding/staged_rows.hpp"
#include "messages/embedding/embedding_config.hpp"
#include "stores/embedding/embedding_store.hpp"
#include "stores/embedding/tracked_store.hpp"

namespace darcy::actors {

struct shard_table {
  de_config config;
  std::unique_ptr<stores::embedding_store> store;
  /// Set while incremental checkpoints track the table's changes: `store` is then this.
  stores::tracked_store* tracked = nullptr;
  /// The checkpoint the tracked changes are since; and, in case that checkpoint's save was
  /// not committed, the one before it with the changes that save took.
  std::string since, previous_since;
  stores::changed_keys previous;
  /// The rows of the last sync not yet merged into `store` (null: none). A lookup reads them
  /// over the store's (read_staged); anything else merges them first (finish_staged).
  std::shared_ptr<staged_rows> staged;
};

struct shard_tables {
  std::mutex mutex;
  /// Guarded by mutex.
  std::map<std::string, shard_table> tables;
};

using shard_tables_ptr = std::shared_ptr<shard_tables>;

} // namespace darcy::actors
