// The embedding master's checkpoints: a consistent save of every shard's part (full or a
// delta on the master's chain), a restore of the newest checkpoint of a folder, and a sync
// that applies one link of a chain on the checkpoint the tables hold. Each runs as exclusive
// work (master_queue.hpp). Internal to actors/embedding/.
#pragma once

#include <string>

#include "actors/embedding/embedding_master.hpp"

namespace darcy::actors::master {

/// `cfg` as this service's shards hold it: in memory, without a path, when
/// o.tables_in_memory; unchanged otherwise. Creates, restores and syncs all place tables so.
void place_table(const embedding_master_options& o, de_config& cfg);

/// One consistent checkpoint: new requests wait while the shards write their parts. A delta on
/// the master's chain when full_every > 0 and fewer than full_every deltas follow its full
/// checkpoint. With `unchanged_since` the caller vouches that the tables hold exactly that
/// checkpoint of `dir` (restored from it, nothing trained since): when it is still the newest
/// there, a new chain starts with a full checkpoint that names it (same_as), so that copies
/// holding it go on.
caf::result<checkpoint_manifest> save(embedding_master_pointer self, const std::string& dir,
                                      int64_t step, const std::string& extra, uint32_t full_every,
                                      const std::string& unchanged_since = {});

/// Loads the newest checkpoint of `dir` (its chain replayed) into every shard.
caf::result<checkpoint_manifest> restore(embedding_master_pointer self, const std::string& dir);

/// Applies `link`, a delta or full checkpoint of `dir`, on the tables: refused unless it
/// applies on the checkpoint they hold (applied_head).
caf::result<ok_atom> sync(embedding_master_pointer self, const std::string& dir,
                          const checkpoint_manifest& link);

} // namespace darcy::actors::master
