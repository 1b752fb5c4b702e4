#include "stores/data/csr_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "messages/error.hpp"

namespace darcy::stores {

namespace {

constexpr char magic[8] = {'D', 'C', 'S', 'R', 'v', '1', 0, 0};
constexpr uint64_t entry_bytes = 8;

struct header {
  char magic[8];
  uint64_t rows;
  uint64_t cols;
  uint64_t nnz;
  float largest;
  char unused[28];
};
static_assert(sizeof(header) == csr_file_header_bytes);

caf::error read_exactly(int fd, void* out, uint64_t bytes, uint64_t at, const std::string& path) {
  auto* to = static_cast<char*>(out);
  while (bytes > 0) {
    auto n = ::pread(fd, to, bytes, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return make_error(errc::io_error, path + ": " + std::strerror(errno));
    if (n == 0)
      return make_error(errc::corrupt_file, path + ": ends early");
    to += n;
    at += static_cast<uint64_t>(n);
    bytes -= static_cast<uint64_t>(n);
  }
  return {};
}

caf::error write_exactly(int fd, const void* data, uint64_t bytes, uint64_t at,
                         const std::string& path) {
  auto* from = static_cast<const char*>(data);
  while (bytes > 0) {
    auto n = ::pwrite(fd, from, bytes, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return make_error(errc::io_error, path + ": " + std::strerror(errno));
    from += n;
    at += static_cast<uint64_t>(n);
    bytes -= static_cast<uint64_t>(n);
  }
  return {};
}

} // namespace

caf::expected<std::shared_ptr<const csr_file>> csr_file::open(const std::string& path) {
  auto fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return make_error(errno == ENOENT ? errc::not_found : errc::io_error,
                      path + ": " + std::strerror(errno));
  auto fail = [&](caf::error err) {
    ::close(fd);
    return err;
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return fail(make_error(errc::io_error, path + ": " + std::strerror(errno)));
  header h{};
  auto size = static_cast<uint64_t>(st.st_size);
  if (size < sizeof h || read_exactly(fd, &h, sizeof h, 0, path) ||
      std::memcmp(h.magic, magic, sizeof magic) != 0)
    return fail(make_error(errc::corrupt_file, path + ": not a matrix side written by Darcy"));
  // Sizes that could not fit a file are refused before they are multiplied.
  if (h.rows >= size / entry_bytes || h.nnz >= size / entry_bytes || !std::isfinite(h.largest))
    return fail(make_error(errc::corrupt_file, path + ": the header's sizes are not the file's"));
  auto expected = sizeof h + h.nnz * entry_bytes + (h.rows + 1) * sizeof(uint64_t);
  if (size != expected)
    return fail(make_error(errc::corrupt_file, path + ": " + std::to_string(size) +
                                                 " bytes where its header says " +
                                                 std::to_string(expected) + " (truncated?)"));
  std::vector<uint64_t> offsets(h.rows + 1);
  if (auto err = read_exactly(fd, offsets.data(), offsets.size() * sizeof(uint64_t),
                              sizeof h + h.nnz * entry_bytes, path))
    return fail(err);
  if (offsets.front() != 0 || offsets.back() != h.nnz ||
      !std::is_sorted(offsets.begin(), offsets.end()))
    return fail(make_error(errc::corrupt_file, path + ": row offsets out of order"));
  return std::shared_ptr<const csr_file>{
    new csr_file{path, fd, h.rows, h.cols, h.largest, std::move(offsets)}};
}

csr_file::~csr_file() {
  ::close(fd_);
}

caf::expected<compute::csr_matrix> csr_file::read_rows(uint64_t begin, uint64_t end) const {
  compute::csr_matrix m;
  if (auto err = read_rows(begin, end, m))
    return err;
  return m;
}

caf::error csr_file::read_rows(uint64_t begin, uint64_t end, compute::csr_matrix& m) const {
  if (begin > end || end > rows_)
    return make_error(errc::invalid_argument, path_ + ": rows " + std::to_string(begin) + ".." +
                                                std::to_string(end) + " of " +
                                                std::to_string(rows_));
  m.rows = end - begin;
  m.cols = cols_;
  auto first = offsets_[begin], count = offsets_[end] - first;
  m.offsets.resize(m.rows + 1);
  for (uint64_t r = 0; r <= m.rows; ++r)
    m.offsets[r] = offsets_[begin + r] - first;
  m.indices.resize(count);
  m.values.resize(count);
  // Entries are (column, value) pairs on disk: read a slice at a time and split them.
  constexpr uint64_t slice = uint64_t{1} << 19;
  std::vector<uint32_t> raw(std::min(count, slice) * 2);
  for (uint64_t at = 0; at < count; at += slice) {
    auto n = std::min(slice, count - at);
    if (auto err = read_exactly(fd_, raw.data(), n * entry_bytes,
                                csr_file_header_bytes + (first + at) * entry_bytes, path_))
      return err;
    for (uint64_t i = 0; i < n; ++i) {
      m.indices[at + i] = raw[2 * i];
      std::memcpy(&m.values[at + i], &raw[2 * i + 1], sizeof(float));
    }
  }
  for (uint64_t r = 0; r < m.rows; ++r)
    for (auto i = m.offsets[r]; i < m.offsets[r + 1]; ++i)
      if (m.indices[i] >= cols_ || (i > m.offsets[r] && m.indices[i] <= m.indices[i - 1]))
        return make_error(errc::corrupt_file, path_ + ": row " + std::to_string(begin + r) +
                                                " has a column out of range or out of order");
  return {};
}

caf::expected<csr_file_writer> csr_file_writer::create(const std::string& path, uint64_t rows,
                                                       uint64_t cols) {
  csr_file_writer w;
  w.fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w.fd_ < 0)
    return make_error(errc::io_error, path + ": " + std::strerror(errno));
  w.path_ = path;
  w.rows_ = rows;
  w.cols_ = cols;
  w.offsets_.reserve(rows + 1);
  w.offsets_.push_back(0);
  return w;
}

csr_file_writer::csr_file_writer(csr_file_writer&& other) noexcept
  : path_(std::move(other.path_)),
    fd_(std::exchange(other.fd_, -1)),
    rows_(other.rows_),
    cols_(other.cols_),
    largest_(other.largest_),
    offsets_(std::move(other.offsets_)),
    buffer_(std::move(other.buffer_)) {
}

csr_file_writer& csr_file_writer::operator=(csr_file_writer&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    rows_ = other.rows_;
    cols_ = other.cols_;
    largest_ = other.largest_;
    offsets_ = std::move(other.offsets_);
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

csr_file_writer::~csr_file_writer() {
  if (fd_ >= 0)
    ::close(fd_);
}

caf::error csr_file_writer::flush() {
  auto at = csr_file_header_bytes + offsets_.back() * entry_bytes - buffer_.size();
  auto err = write_exactly(fd_, buffer_.data(), buffer_.size(), at, path_);
  buffer_.clear();
  return err;
}

caf::error csr_file_writer::add_row(const std::vector<std::pair<uint32_t, float>>& entries) {
  if (offsets_.size() > rows_)
    return make_error(errc::invalid_argument,
                      path_ + ": more than the " + std::to_string(rows_) + " rows announced");
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].first >= cols_ || (i > 0 && entries[i].first <= entries[i - 1].first) ||
        !std::isfinite(entries[i].second))
      return make_error(errc::invalid_argument,
                        path_ + ": row " + std::to_string(offsets_.size() - 1) +
                          " has a column out of range or out of order, or a value not finite");
  for (auto& [col, value] : entries) {
    char bytes[entry_bytes];
    std::memcpy(bytes, &col, 4);
    std::memcpy(bytes + 4, &value, 4);
    buffer_.insert(buffer_.end(), bytes, bytes + entry_bytes);
    largest_ = std::max(largest_, value);
  }
  offsets_.push_back(offsets_.back() + entries.size());
  if (buffer_.size() >= (size_t{8} << 20))
    return flush();
  return {};
}

caf::error csr_file_writer::finish() {
  if (offsets_.size() != rows_ + 1)
    return make_error(errc::invalid_argument, path_ + ": " + std::to_string(offsets_.size() - 1) +
                                                " rows of the " + std::to_string(rows_) +
                                                " announced");
  if (auto err = flush())
    return err;
  auto nnz = offsets_.back();
  if (auto err = write_exactly(fd_, offsets_.data(), offsets_.size() * sizeof(uint64_t),
                               csr_file_header_bytes + nnz * entry_bytes, path_))
    return err;
  header h{};
  std::memcpy(h.magic, magic, sizeof magic);
  h.rows = rows_;
  h.cols = cols_;
  h.nnz = nnz;
  h.largest = largest_;
  if (auto err = write_exactly(fd_, &h, sizeof h, 0, path_))
    return err;
  if (::close(std::exchange(fd_, -1)) != 0)
    return make_error(errc::io_error, path_ + ": " + std::strerror(errno));
  return {};
}

caf::error write_csr_file(const std::string& path, const compute::csr_matrix& m) {
  auto w = csr_file_writer::create(path, m.rows, m.cols);
  if (!w)
    return w.error();
  std::vector<std::pair<uint32_t, float>> row;
  for (uint64_t r = 0; r < m.rows; ++r) {
    row.clear();
    for (auto i = m.offsets[r]; i < m.offsets[r + 1]; ++i)
      row.emplace_back(m.indices[i], m.values[i]);
    if (auto err = w->add_row(row))
      return err;
  }
  return w->finish();
}

namespace {

/// Calls f(first_row, rows) for consecutive slices of `in` of about 8M entries each.
template <class F>
caf::error for_each_slice(const csr_file& in, F f) {
  constexpr uint64_t slice_entries = uint64_t{8} << 20;
  auto& offsets = in.offsets();
  for (uint64_t begin = 0; begin < in.rows();) {
    auto end = begin + 1;
    while (end < in.rows() && offsets[end + 1] - offsets[begin] <= slice_entries)
      ++end;
    auto rows = in.read_rows(begin, end);
    if (!rows)
      return rows.error();
    if (auto err = f(begin, *rows))
      return err;
    begin = end;
  }
  return {};
}

} // namespace

caf::error transpose_csr_file(const csr_file& in, const std::string& out, uint64_t memory_bytes) {
  std::vector<uint64_t> counts(in.cols(), 0);
  if (auto err = for_each_slice(in, [&](uint64_t, const compute::csr_matrix& m) {
        for (auto c : m.indices)
          ++counts[c];
        return caf::error{};
      }))
    return err;
  auto w = csr_file_writer::create(out, in.cols(), in.rows());
  if (!w)
    return w.error();
  auto budget = std::max<uint64_t>(1, memory_bytes / 12);
  std::vector<std::pair<uint32_t, float>> entries, row;
  std::vector<uint64_t> starts, filled;
  for (uint64_t first = 0; first < in.cols();) {
    // Columns [first, last) whose entries fit the budget (one column at least).
    auto last = first;
    uint64_t total = 0;
    while (last < in.cols() && (last == first || total + counts[last] <= budget))
      total += counts[last++];
    starts.assign(last - first + 1, 0);
    for (auto c = first; c < last; ++c)
      starts[c - first + 1] = starts[c - first] + counts[c];
    filled.assign(starts.begin(), starts.end() - 1);
    entries.resize(total);
    // Rows come in ascending order, so each column's rows ascend as they are placed.
    if (auto err = for_each_slice(in, [&](uint64_t begin, const compute::csr_matrix& m) {
          for (uint64_t r = 0; r < m.rows; ++r)
            for (auto i = m.offsets[r]; i < m.offsets[r + 1]; ++i)
              if (auto c = m.indices[i]; c >= first && c < last)
                entries[filled[c - first]++] = {static_cast<uint32_t>(begin + r), m.values[i]};
          return caf::error{};
        }))
      return err;
    for (auto c = first; c < last; ++c) {
      row.assign(entries.begin() + starts[c - first], entries.begin() + starts[c - first + 1]);
      if (auto err = w->add_row(row))
        return err;
    }
    first = last;
  }
  return w->finish();
}

} // namespace darcy::stores
