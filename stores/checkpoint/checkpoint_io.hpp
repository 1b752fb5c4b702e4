// Checkpoint files on disk (schema: messages/checkpoint.capnp). Every file is written to a
// temporary name and renamed into place; the manifest is written last, so a crash at any
// moment leaves the previous manifest and the files it names intact. Reads verify size and
// checksum before parsing, so a truncated or corrupted file fails with errc::corrupt_file.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

#include "messages/checkpoint.hpp"
#include "stores/embedding/embedding_store.hpp"

namespace darcy::stores {

/// The manifest's file name inside a checkpoint directory.
inline constexpr const char* manifest_name = "MANIFEST";

/// One embedding's config as bytes (an EmbeddingConfig message), and back; decode_config
/// fails with errc::corrupt_file naming `what`.
std::string encode_config(const de_config& cfg);
caf::expected<de_config> decode_config(const std::string& bytes, const std::string& what);

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

caf::error write_manifest(const std::string& dir, const checkpoint_manifest& manifest);

/// errc::not_found when the directory holds no manifest; errc::corrupt_file when it is damaged.
caf::expected<checkpoint_manifest> read_manifest(const std::string& dir);

} // namespace darcy::stores
