// Incremental checkpoints on the one checkpoint mechanism. A chain is a full checkpoint and the
// delta checkpoints saved on it, each naming the one before it (checkpoint_manifest::base); a
// delta's parts hold only what changed since its base. A service replays a chain from the full
// checkpoint forward (the embedding service: stores/embedding/chain_replay.hpp).
//
//   auto chain = stores::read_chain(root, *root.read_manifest());   // full first
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "messages/checkpoint.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::stores {

/// The chain that ends with `head`: its full checkpoint first, `head` last (just `head` when it
/// is full). errc::corrupt_file when a base is missing or damaged, or the links loop.
caf::expected<std::vector<checkpoint_manifest>> read_chain(const checkpoint_dir& root,
                                                           checkpoint_manifest head);

/// The newest checkpoint under `root` whose whole chain is on this disk, every embedding part
/// and part of every link at its size (not checksummed): the current one, or, when a save's
/// parts never reached this host (a cluster's shard host died between the manifest and the
/// fetch, ops::save), an older one. errc::not_found when none is.
caf::expected<checkpoint_manifest> newest_whole_checkpoint(const checkpoint_dir& root);

/// Makes checkpoint `id` under `root` the current one (a restore then loads it), removing no
/// other checkpoint; nothing to do when it is current already. errc::not_found, changing
/// nothing, when `root` holds no checkpoint `id` or not its whole chain.
caf::error make_current(const checkpoint_dir& root, const std::string& id);

} // namespace darcy::stores
