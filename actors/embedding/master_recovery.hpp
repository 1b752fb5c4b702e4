// The embedding master's recovery of supervised shards (a shard that went down holds
// requests back, and one that came back as a new actor gets every table again and the rows of
// the last checkpoint before it serves), and the down of a shard nobody supervises. Internal
// to actors/embedding/.
#pragma once

#include "actors/embedding/embedding_master.hpp"
#include "messages/cluster/membership.hpp"

namespace darcy::actors::master {

/// Recovers one pending shard, unless a save, restore or recovery already runs (end_exclusive
/// calls back here). A shard that came back as a new actor gets every table again and the rows
/// of the last checkpoint, when there is one, before it serves; requests wait meanwhile.
void recover_pending(embedding_master_pointer self);

/// A shard's service went down or came back (supervised shards only).
void on_cluster_event(embedding_master_pointer self, const cluster_event& event);

/// A shard the master monitors (one nobody supervises: a serving copy's) went down, or its node
/// did: the requests waiting on it fail at once with errc::node_unreachable instead of waiting
/// out their attempts; later ones fail as CAF answers for a receiver that is gone.
void on_shard_down(embedding_master_pointer self, const caf::down_msg& msg);

} // namespace darcy::actors::master
