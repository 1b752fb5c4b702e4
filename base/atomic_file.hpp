// Crash-safe file replacement for checkpoints and manifests: the new content is written to a
// temporary file beside the target, flushed to disk, then renamed over it. A crash at any
// moment leaves either the old file or the new one, never a mix.
#pragma once

#include <string>
#include <string_view>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace darcy::base {

/// Fails with errc::io_error naming the path and the system's reason. Not `durable`: nothing is
/// flushed to disk, for a copy that can be fetched again; a crash then may lose the new file
/// (or leave it empty), but never leaves a mix of the two.
caf::error write_file_atomically(const std::string& path, std::string_view content,
                                 bool durable = true);

/// Reads the whole file; errc::not_found when it does not exist, errc::io_error otherwise.
caf::expected<std::string> read_file(const std::string& path);

} // namespace darcy::base
