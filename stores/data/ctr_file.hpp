// Criteo display-advertising TSV files, as the Kaggle and Terabyte sets come: per line a label,
// 13 integer fields and 26 categorical fields of 8 hex digits, tab-separated, any field but the
// label possibly empty. Reading streams (one line at a time) and accepts gzip; a malformed line
// is an error naming file:line, or is counted and skipped.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "compute/ctr_synthetic.hpp"

namespace darcy::stores {

/// One parsed line. `cats` view the reader's line buffer: valid until the next read.
struct ctr_row {
  bool label = false;
  std::array<int64_t, compute::ctr_int_fields> ints{};
  std::array<bool, compute::ctr_int_fields> int_present{};
  /// The 8 hex digits as written (empty when the field is).
  std::array<std::string_view, compute::ctr_cat_fields> cats{};
};

/// Lines longer than this are malformed (a Criteo line is under 500 bytes).
inline constexpr size_t ctr_max_line = 64 * 1024;

class ctr_reader {
public:
  /// Opens `path`, plain or gzip (told by its bytes, not its name). errc::io_error when it
  /// cannot be opened. With `skip_malformed`, a malformed line is counted and skipped.
  static caf::expected<std::unique_ptr<ctr_reader>> open(const std::string& path,
                                                         bool skip_malformed = false);
  ~ctr_reader();

  /// Reads the next row into `row`; false at the end of the file. errc::corrupt_file naming
  /// `path:line` and the fault for a malformed line (unless skipped) or a file cut short.
  caf::expected<bool> next(ctr_row& row);

  /// Lines read so far, and the malformed ones skipped.
  uint64_t lines() const { return line_; }
  uint64_t skipped() const { return skipped_; }

private:
  ctr_reader(std::string path, void* file, bool skip_malformed);
  /// The next line without its newline, in line_buffer_; false at the end.
  caf::expected<bool> read_line();

  std::string path_;
  void* file_; // gzFile
  bool skip_malformed_;
  std::string line_buffer_;
  /// The last line read was longer than ctr_max_line; line_buffer_ holds its start.
  bool too_long_ = false;
  uint64_t line_ = 0;
  uint64_t skipped_ = 0;
};

/// Parses one line (without its newline) into `row`; the reason when it is malformed.
/// `row.cats` view `line`.
std::string parse_ctr_line(std::string_view line, ctr_row& row);

/// Appends `row` as one line of the format, without its newline, to `out`.
void append_ctr_line(const compute::ctr_synthetic_row& row, std::string& out);

/// Writes rows in the same format, gzip when `path` ends in ".gz".
class ctr_writer {
public:
  static caf::expected<std::unique_ptr<ctr_writer>> open(const std::string& path);
  ~ctr_writer();

  caf::error write(const compute::ctr_synthetic_row& row);
  /// Flushes and closes; errc::io_error when the bytes did not all reach the file.
  caf::error close();

private:
  ctr_writer(std::string path, void* file) : path_(std::move(path)), file_(file) {}

  std::string path_;
  void* file_; // gzFile
  std::string buffer_;
};

} // namespace darcy::stores
