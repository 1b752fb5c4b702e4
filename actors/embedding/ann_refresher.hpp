// The background refresher of a shard's ANN indexes (stores/embedding/indexed_store.hpp): a
// helper actor that, every refresh_ms, indexes the rows each table noted as changed, a chunk at
// a time under the tables' lock, so that lookups and updates interleave; the k-means of new
// lists runs on a thread of its own, without the lock.
#pragma once

#include <caf/actor.hpp>
#include <caf/local_actor.hpp>

#include "actors/embedding/shard_tables.hpp"

namespace darcy::actors {

/// Spawns the refresher of `tables`, linked to `owner` (it stops with the shard). A failed
/// refresh is logged and tried again at the next tick; the rows stay noted.
caf::actor spawn_ann_refresher(caf::local_actor* owner, shard_tables_ptr tables, uint32_t shard);

/// True when some table of `tables` keeps an ANN index. The caller holds the tables' lock.
bool any_ann_table(const shard_tables& tables);

} // namespace darcy::actors
