// A file of one dense row-major float matrix, as WALS factor checkpoints and exported models
// store them: a 32-byte header (magic, rows, cols, checksum) then the floats. Written
// atomically; a truncated or altered file is refused on read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace darcy::stores {

struct float_matrix {
  uint64_t rows = 0;
  uint64_t cols = 0;
  std::vector<float> values;
};

/// The file's bytes. Precondition: values.size() == rows * cols.
std::string encode_matrix(const float_matrix& m);

/// errc::corrupt_file (naming `path`) for a bad magic, a size that disagrees with the header,
/// or a checksum mismatch.
caf::expected<float_matrix> decode_matrix(std::string_view bytes, const std::string& path);

/// Precondition: values.size() == rows * cols. errc::io_error on failure.
caf::error write_matrix_file(const std::string& path, const float_matrix& m);

/// errc::not_found for a missing file, errc::corrupt_file (naming the path) for a bad magic,
/// a size that disagrees with the header, or a checksum mismatch.
caf::expected<float_matrix> read_matrix_file(const std::string& path);

} // namespace darcy::stores
