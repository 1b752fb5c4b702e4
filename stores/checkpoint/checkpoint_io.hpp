// The manifest of a checkpoint on disk (schema: messages/checkpoint.capnp), and the embedding
// configs it names. The manifest is written last, to a temporary name renamed into place, so a
// crash at any moment leaves the previous manifest and the files it names intact. Reads verify
// its checksum before parsing: a truncated or corrupted one fails with errc::corrupt_file. The
// embedding service's part files are stores/embedding/embedding_part.hpp's.
#pragma once

#include <string>

#include <caf/expected.hpp>

#include "messages/checkpoint.hpp"

namespace darcy::stores {

/// The manifest's file name inside a checkpoint directory.
inline constexpr const char* manifest_name = "MANIFEST";

/// One embedding's config as bytes (an EmbeddingConfig message), and back; decode_config
/// fails with errc::corrupt_file naming `what`.
std::string encode_config(const de_config& cfg);
caf::expected<de_config> decode_config(const std::string& bytes, const std::string& what);

caf::error write_manifest(const std::string& dir, const checkpoint_manifest& manifest,
                          bool durable = true);

/// errc::not_found when the directory holds no manifest; errc::corrupt_file when it is damaged.
caf::expected<checkpoint_manifest> read_manifest(const std::string& dir);

} // namespace darcy::stores
