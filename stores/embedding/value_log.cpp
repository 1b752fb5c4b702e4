#include "stores/embedding/value_log.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

#include "messages/error.hpp"

namespace darcy::stores {

namespace {

constexpr size_t pointer_bytes = 16;
/// A record starts with its key's length.
constexpr size_t prefix_bytes = sizeof(uint32_t);
/// Past this many buffered bytes an append writes the buffer out.
constexpr size_t buffer_limit = 1 << 20;
/// The high bit of a record's key length marks the record of a removal.
constexpr uint32_t removal_flag = uint32_t{1} << 31;
/// A scan reads a file in pieces of this many bytes, or one record when that is longer.
constexpr size_t scan_piece = 1 << 20;

std::string file_name(const std::string& dir, uint32_t generation) {
  char name[32];
  std::snprintf(name, sizeof name, "values-%06u.vlog", generation);
  return dir + "/" + name;
}

/// The generation of a file named as file_name names it; 0 for any other name.
uint32_t generation_of(std::string_view name) {
  constexpr std::string_view prefix = "values-", suffix = ".vlog";
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix))
    return 0;
  auto digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  uint64_t generation = 0;
  for (auto c : digits) {
    if (c < '0' || c > '9' || generation > UINT32_MAX / 10)
      return 0;
    generation = generation * 10 + static_cast<uint64_t>(c - '0');
  }
  return generation <= UINT32_MAX ? static_cast<uint32_t>(generation) : 0;
}

caf::error io_error(const std::string& what) {
  return make_error(errc::io_error, what + ": " + std::strerror(errno));
}

} // namespace

std::string encode_pointer(const value_pointer& p) {
  std::string bytes(pointer_bytes, '\0');
  std::memcpy(bytes.data(), &p.generation, 4);
  std::memcpy(bytes.data() + 4, &p.offset, 8);
  std::memcpy(bytes.data() + 12, &p.length, 4);
  return bytes;
}

bool decode_pointer(std::string_view bytes, value_pointer& out) {
  if (bytes.size() != pointer_bytes)
    return false;
  std::memcpy(&out.generation, bytes.data(), 4);
  std::memcpy(&out.offset, bytes.data() + 4, 8);
  std::memcpy(&out.length, bytes.data() + 12, 4);
  return true;
}

value_log::value_log(value_log&& other) noexcept {
  *this = std::move(other);
}

value_log& value_log::operator=(value_log&& other) noexcept {
  if (this != &other) {
    close_all();
    dir_ = std::move(other.dir_);
    files_ = std::move(other.files_);
    other.files_.clear();
    current_ = other.current_;
    buffer_ = std::move(other.buffer_);
    garbage_ = other.garbage_;
    scanned_end_ = other.scanned_end_;
  }
  return *this;
}

value_log::~value_log() {
  close_all();
}

void value_log::close_all() {
  for (auto& [generation, f] : files_)
    ::close(f.fd);
  files_.clear();
}

caf::expected<value_log> value_log::open(const std::string& dir) {
  value_log log;
  log.dir_ = dir;
  std::error_code ec;
  for (auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (auto generation = generation_of(entry.path().filename().string()))
      if (auto err = log.open_file(generation))
        return err;
  if (ec)
    return make_error(errc::io_error, "cannot list " + dir + ": " + ec.message());
  if (log.files_.empty()) {
    if (auto err = log.open_file(1))
      return err;
  }
  log.current_ = log.files_.rbegin()->first;
  return log;
}

caf::error value_log::open_file(uint32_t generation) {
  auto path = file_name(dir_, generation);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_error("cannot open " + path);
  auto size = ::lseek(fd, 0, SEEK_END);
  if (size < 0) {
    auto err = io_error("cannot size " + path);
    ::close(fd);
    return err;
  }
  auto& f = files_[generation];
  f.fd = fd;
  f.size.store(static_cast<uint64_t>(size), std::memory_order_release);
  return {};
}

uint32_t value_log::record_length(size_t key_bytes, size_t record_bytes) {
  return static_cast<uint32_t>(prefix_bytes + key_bytes + record_bytes);
}

value_pointer value_log::append(std::string_view key, std::string_view record) {
  auto& f = files_[current_];
  value_pointer p{current_, f.size + buffer_.size(), record_length(key.size(), record.size())};
  auto key_bytes = static_cast<uint32_t>(key.size());
  buffer_.append(reinterpret_cast<const char*>(&key_bytes), prefix_bytes);
  buffer_.append(key);
  buffer_.append(record);
  return p;
}

value_pointer value_log::append_removal(std::string_view key) {
  auto& f = files_[current_];
  value_pointer p{current_, f.size + buffer_.size(), record_length(key.size(), 0)};
  if (key.size() >= removal_flag)
    return p;
  auto header = static_cast<uint32_t>(key.size()) | removal_flag;
  buffer_.append(reinterpret_cast<const char*>(&header), prefix_bytes);
  buffer_.append(key);
  return p;
}

caf::error value_log::scan(size_t record_bytes,
                           const std::function<caf::error(const scanned_record&)>& f,
                           uint32_t below) {
  std::string piece;
  for (auto& [generation, file] : files_) {
    if (generation >= below)
      break;
    auto size = file.size.load(std::memory_order_acquire);
    uint64_t piece_start = 0;
    piece.clear();
    // Holds bytes [at, end) of the file in `piece`, reading from `at` on when it does not.
    auto hold = [&](uint64_t at, uint64_t end) -> caf::error {
      if (end <= piece_start + piece.size())
        return {};
      piece_start = at;
      piece.resize(std::min<uint64_t>(size, std::max<uint64_t>(end, at + scan_piece)) - at);
      value_pointer whole{generation, at, static_cast<uint32_t>(piece.size())};
      return read_bytes(whole, {}, piece);
    };
    uint64_t at = 0;
    while (at + prefix_bytes <= size) {
      if (auto err = hold(at, at + prefix_bytes))
        return err;
      uint32_t header = 0;
      std::memcpy(&header, piece.data() + (at - piece_start), prefix_bytes);
      bool removal = (header & removal_flag) != 0;
      uint64_t key_bytes = header & ~removal_flag;
      uint64_t length = prefix_bytes + key_bytes + (removal ? 0 : record_bytes);
      if (at + length > size)
        break;
      if (auto err = hold(at, at + length))
        return err;
      auto* base = piece.data() + (at - piece_start);
      scanned_record r{.key = {base + prefix_bytes, key_bytes},
                       .at = {generation, at, static_cast<uint32_t>(length)},
                       .record = {},
                       .removal = removal};
      if (!removal)
        r.record = {base + prefix_bytes + key_bytes, record_bytes};
      if (auto err = f(r))
        return err;
      at += length;
    }
    if (generation == current_)
      scanned_end_ = at;
  }
  return {};
}

caf::error value_log::cut_torn_tail() {
  if (!buffer_.empty())
    return make_error(errc::invalid_argument, "value log: a cut with records buffered");
  auto& f = files_[current_];
  if (!scanned_end_ || *scanned_end_ >= f.size)
    return {};
  if (::ftruncate(f.fd, static_cast<off_t>(*scanned_end_)) != 0)
    return io_error("cannot cut " + file_name(dir_, current_));
  f.size.store(*scanned_end_, std::memory_order_release);
  return {};
}

caf::error value_log::write_out(bool sync) {
  auto& f = files_[current_];
  size_t done = 0;
  while (done < buffer_.size()) {
    auto n = ::pwrite(f.fd, buffer_.data() + done, buffer_.size() - done, f.size + done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return io_error("cannot write " + file_name(dir_, current_));
    done += static_cast<size_t>(n);
  }
  f.size.store(f.size.load(std::memory_order_relaxed) + buffer_.size(), std::memory_order_release);
  buffer_.clear();
  if (buffer_.capacity() > buffer_limit)
    buffer_.shrink_to_fit();
  if (sync && ::fdatasync(f.fd) != 0)
    return io_error("cannot sync " + file_name(dir_, current_));
  return {};
}

caf::error value_log::read_bytes(const value_pointer& p, std::string_view key,
                                 std::string& record) {
  auto name = [&] { return file_name(dir_, p.generation) + " at " + std::to_string(p.offset); };
  auto f = files_.find(p.generation);
  if (f == files_.end() || p.length < prefix_bytes + key.size() ||
      p.offset + p.length > f->second.size.load(std::memory_order_acquire))
    return make_error(errc::corrupt_file, "the record of key '" + std::string{key} +
                                            "' lies outside its log: " + name());
  record.resize(p.length);
  size_t done = 0;
  while (done < p.length) {
    auto n = ::pread(f->second.fd, record.data() + done, p.length - done, p.offset + done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n == 0 ? make_error(errc::corrupt_file, "cut short: " + name())
                    : io_error("cannot read " + name());
    done += static_cast<size_t>(n);
  }
  return {};
}

caf::expected<std::string> value_log::key_at(const value_pointer& p) {
  std::string record;
  if (auto err = read_bytes(p, {}, record))
    return err;
  uint32_t key_bytes = 0;
  std::memcpy(&key_bytes, record.data(), prefix_bytes);
  if (key_bytes > record.size() - prefix_bytes)
    return make_error(errc::corrupt_file, "a record of " + file_name(dir_, p.generation) + " at " +
                                            std::to_string(p.offset) +
                                            " holds a key longer than itself");
  return record.substr(prefix_bytes, key_bytes);
}

caf::error value_log::read(const value_pointer& p, std::string_view key, std::string& record) {
  if (auto err = read_bytes(p, key, record))
    return err;
  auto name = [&] { return file_name(dir_, p.generation) + " at " + std::to_string(p.offset); };
  uint32_t key_bytes = 0;
  std::memcpy(&key_bytes, record.data(), prefix_bytes);
  if (key_bytes != key.size() || std::string_view{record}.substr(prefix_bytes, key_bytes) != key)
    return make_error(errc::corrupt_file,
                      "the record for key '" + std::string{key} + "' holds another key: " + name());
  record.erase(0, prefix_bytes + key_bytes);
  return {};
}

caf::expected<uint32_t> value_log::start_generation() {
  if (!buffer_.empty())
    return make_error(errc::invalid_argument, "value log: a new generation with records buffered");
  auto next = current_ + 1;
  if (auto err = open_file(next))
    return err;
  current_ = next;
  scanned_end_.reset();
  return next;
}

caf::error value_log::drop_generations_below(uint32_t generation) {
  for (auto it = files_.begin(); it != files_.end() && it->first < generation;) {
    ::close(it->second.fd);
    auto path = file_name(dir_, it->first);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return io_error("cannot remove " + path);
    it = files_.erase(it);
  }
  return {};
}

uint64_t value_log::bytes() const {
  return written_bytes() + buffer_.size();
}

uint64_t value_log::written_bytes() const {
  uint64_t total = 0;
  for (auto& [generation, f] : files_)
    total += f.size.load(std::memory_order_acquire);
  return total;
}

} // namespace darcy::stores
