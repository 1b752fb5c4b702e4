// A node's file store: writes the files another process sends it, and reads back the ones it
// asks for, at the same absolute paths on this node's disk, so that an embedding service's
// checkpoints and syncs need no file system shared between the caller's host and its shards'.
// Every member with the cluster's credential may spawn actors that read and write paths of
// their choosing; this one adds no reach beyond that.
#pragma once

#include "messages/cluster/cluster_interfaces.hpp"

namespace darcy::actors {

/// The spawn name of the file store (it has no state to carry the constant).
inline constexpr const char* file_store_name = "darcy.file_store";

/// The folders a prune may remove: checkpoints (stores/checkpoint/checkpoint_dir.hpp's ids).
inline constexpr const char* checkpoint_folder_prefix = "ckpt-";

/// Every path must be absolute, without a ".." part (errc::invalid_argument). A file written
/// is whole or absent, never torn (base::write_file_atomically, not flushed to disk: a copy
/// that can be sent again); a fetch of a missing file is errc::not_found; errc::io_error names
/// the path otherwise. A prune of a root that does not exist removes nothing.
file_store_actor::behavior_type file_store(file_store_actor::pointer self);

} // namespace darcy::actors
