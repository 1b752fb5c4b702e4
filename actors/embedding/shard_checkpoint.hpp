// An embedding shard's part of a checkpoint: writing every table's rows (whole, or the changes
// since the chain's last link when the shard tracked them) and loading a checkpoint's rows
// (its chain replayed) in place of the tables. Internal to actors/embedding/.
#pragma once

#include <string>
#include <vector>

#include "actors/embedding/embedding_shard.hpp"

namespace darcy::actors::shard_checkpoint {

using shard_pointer = embedding_shard_actor::stateful_pointer<embedding_shard_state>;

/// Writes one part per table into checkpoint `id` of `dir`: a delta holding the changes since
/// `base` when the table's tracking covers them, else every row. With track_limit, tracking
/// then goes on from `id` (kept for a retry of `base` should `id` not be committed); without,
/// it stops. A repeat of a save already answered gets the same answer without writing again.
caf::result<std::vector<checkpoint_embedding>> save_part(shard_pointer self, const std::string& dir,
                                                         const std::string& id, uint32_t index,
                                                         const std::string& base,
                                                         uint64_t track_limit);

/// Loads shard `index` of `count`'s rows of `manifest` (its chain replayed from its full
/// checkpoint) in place of the tables. Every file is verified first, so a damaged checkpoint
/// changes nothing. Memory tables are built aside, on a thread of their own while the shard
/// goes on serving the old ones (memory for both meanwhile), and swapped in whole; a persistent
/// table is rebuilt in place, in the handler (its database cannot be opened twice).
/// `request_id` is applied once; its repeats meanwhile get the first one's answer. A load
/// begun while another is pending supersedes it: the earlier one is answered
/// errc::unavailable and its tables dropped, so the tables are always the last load's.
caf::result<ok_atom> load_part(shard_pointer self, const std::string& dir,
                               const checkpoint_manifest& manifest, uint32_t index, uint32_t count,
                               uint64_t request_id);

} // namespace darcy::actors::shard_checkpoint
