// The embedding service's checkpoint parts (ShardFile messages, messages/checkpoint.capnp): a
// shard's rows with their whole state, whole or as a delta of the rows changed since the
// checkpoint before, written through checkpoint_dir (a checksum, a temporary name renamed into
// place) and read back checked.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

#include "messages/checkpoint.hpp"
#include "stores/embedding/embedding_store.hpp"

namespace darcy::stores {

/// Writes every row of `store` (config `cfg`) to dir/rel_path.
caf::expected<file_info> write_shard_file(const std::string& dir, const std::string& rel_path,
                                          const de_config& cfg, embedding_store& store);

/// Reads dir/file.path after checking its size and checksum and calls f for every row.
/// Fails with errc::corrupt_file (naming the file) or errc::dimension_mismatch when the file
/// does not belong to an embedding of `cfg`'s dim and optimizer.
caf::error read_shard_file(const std::string& dir, const file_info& file, const de_config& cfg,
                           const std::function<caf::error(const row_record&)>& f);

/// Writes a delta part to dir/rel_path: the rows of those of `keys` that `store` holds, with
/// their whole state, and the others as deleted. `keys` must be deduplicated by the caller.
caf::expected<file_info> write_delta_file(const std::string& dir, const std::string& rel_path,
                                          const de_config& cfg, embedding_store& store,
                                          std::span<const std::string_view> keys);

/// As read_shard_file, for a part of either kind: calls f for every row, then deleted for
/// every key a delta part removes, and answers whether the part is a delta (false: it holds
/// every row of its shard).
caf::expected<bool> read_shard_part(const std::string& dir, const file_info& file,
                                    const de_config& cfg,
                                    const std::function<caf::error(const row_record&)>& f,
                                    const std::function<caf::error(std::string_view)>& deleted);

} // namespace darcy::stores
