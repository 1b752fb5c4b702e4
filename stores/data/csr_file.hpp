// One side of a WALS matrix on disk (its rows, or its transpose's), so that a worker reads the
// rows of the block it solves with one pread instead of holding the whole matrix: a header,
// every entry as (column, value) row after row, then the row offsets. Written in one pass by
// csr_file_writer; the transpose is written from a file by column ranges under a memory budget.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "compute/sparse_matrix.hpp"

namespace darcy::stores {

/// The bytes of a file's header, before its entries.
inline constexpr uint64_t csr_file_header_bytes = 64;

/// An open file: its shape and row offsets in memory ((rows + 1) * 8 bytes), its entries read
/// on demand. Reads may run on several threads at once.
class csr_file {
public:
  /// errc::not_found for a missing file; errc::corrupt_file naming the file for a bad header,
  /// a size that is not what the header says (a truncated file), or offsets that do not rise
  /// from 0 to the entries' count.
  static caf::expected<std::shared_ptr<const csr_file>> open(const std::string& path);

  csr_file(const csr_file&) = delete;
  csr_file& operator=(const csr_file&) = delete;
  ~csr_file();

  uint64_t rows() const { return rows_; }
  uint64_t cols() const { return cols_; }
  uint64_t nnz() const { return offsets_.back(); }
  /// The largest value of any entry (0 for none).
  float largest() const { return largest_; }
  const std::vector<uint64_t>& offsets() const { return offsets_; }
  const std::string& path() const { return path_; }

  /// Rows [begin, end) as a matrix of end - begin rows with cols() columns; begin <= end <=
  /// rows(). errc::io_error when the file cannot be read, errc::corrupt_file when a column is
  /// out of range or a row's columns do not ascend.
  caf::expected<compute::csr_matrix> read_rows(uint64_t begin, uint64_t end) const;

  /// read_rows into `m`, whose buffers are reused (a reader of block after block allocates
  /// once). On an error `m` holds no meaningful rows.
  caf::error read_rows(uint64_t begin, uint64_t end, compute::csr_matrix& m) const;

private:
  csr_file(std::string path, int fd, uint64_t rows, uint64_t cols, float largest,
           std::vector<uint64_t> offsets)
    : path_(std::move(path)),
      fd_(fd),
      rows_(rows),
      cols_(cols),
      largest_(largest),
      offsets_(std::move(offsets)) {}

  std::string path_;
  int fd_;
  uint64_t rows_;
  uint64_t cols_;
  float largest_;
  std::vector<uint64_t> offsets_;
};

/// Writes a file of `rows` x `cols` one row at a time, in order. Nothing is valid until
/// finish() returned: the header is written last.
class csr_file_writer {
public:
  /// errc::io_error when `path` cannot be created.
  static caf::expected<csr_file_writer> create(const std::string& path, uint64_t rows,
                                               uint64_t cols);

  csr_file_writer(csr_file_writer&&) noexcept;
  csr_file_writer& operator=(csr_file_writer&&) noexcept;
  ~csr_file_writer();

  /// Appends the next row: (column, value) pairs by strictly ascending column, each below cols
  /// and each value finite (errc::invalid_argument otherwise, nothing written).
  caf::error add_row(const std::vector<std::pair<uint32_t, float>>& entries);
  /// Writes the offsets and the header; errc::invalid_argument when fewer rows than announced
  /// were added.
  caf::error finish();

private:
  csr_file_writer() = default;
  caf::error flush();

  std::string path_;
  int fd_ = -1;
  uint64_t rows_ = 0;
  uint64_t cols_ = 0;
  float largest_ = 0;
  std::vector<uint64_t> offsets_;
  std::vector<char> buffer_;
};

/// Writes `m` to `path` (for tests and small matrices).
caf::error write_csr_file(const std::string& path, const compute::csr_matrix& m);

/// Writes the transpose of `in` to `out`, reading `in` once per range of columns whose entries
/// take at most `memory_bytes` (12 bytes an entry; a column larger than that is a range alone).
caf::error transpose_csr_file(const csr_file& in, const std::string& out, uint64_t memory_bytes);

} // namespace darcy::stores
