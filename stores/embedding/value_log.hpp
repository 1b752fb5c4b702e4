// The rows of a store, appended as records (key and row, or the removal of a key's row) to
// generation files (values-NNNNNN.vlog): a store finds a record by its value_pointer, kept in
// memory or in a database beside the log (as WiscKey), and rebuilds them by scanning the log
// in the order written. A record is written once and read with one pread; a record a newer one
// replaces is garbage until a collection copies the live records into a new generation and
// drops the old ones.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace darcy::stores {

/// Where a record lies: its generation, its offset in that generation's file and its length
/// (the key's length prefix and the key included).
struct value_pointer {
  uint32_t generation = 0;
  uint64_t offset = 0;
  uint32_t length = 0;

  friend bool operator==(const value_pointer&, const value_pointer&) = default;
};

/// A record scan() met: a row's record, or the removal of `key`'s row.
struct scanned_record {
  std::string_view key;
  value_pointer at;
  /// The row's record (empty for a removal), valid during the call.
  std::string_view record;
  bool removal = false;
};

/// The 16 bytes a database stores for `p`.
std::string encode_pointer(const value_pointer& p);
/// False, with `out` unchanged, unless `bytes` is what encode_pointer writes.
bool decode_pointer(std::string_view bytes, value_pointer& out);

/// One thread may append and write out while another reads and counts written_bytes(), as
/// long as neither starts or drops a generation meanwhile; every other use is one thread's.
class value_log {
public:
  value_log() = default;
  value_log(value_log&&) noexcept;
  value_log& operator=(value_log&&) noexcept;
  value_log(const value_log&) = delete;
  value_log& operator=(const value_log&) = delete;
  ~value_log();

  /// Opens every generation file in `dir` (which must exist); appends go to the newest, a
  /// first one is created when there is none. A file's tail that no pointer names (a crash
  /// between append and the database's write) is garbage, not an error.
  static caf::expected<value_log> open(const std::string& dir);

  /// Buffers the record of `key`; its pointer is valid for reads once write_out returned.
  value_pointer append(std::string_view key, std::string_view record);
  /// Buffers a record of the removal of `key`'s row: a scan after it meets no row of `key`
  /// until a newer record. Keys of 2^31 bytes or more are not logged.
  value_pointer append_removal(std::string_view key);
  /// Calls f for each whole record of the generations below `below`, oldest generation first
  /// and each in the order written, whose rows' records take `record_bytes`; stops at f's
  /// first error. Only what write_out wrote is read. A file ends at a record it holds only
  /// part of (a write a crash cut short); cut_torn_tail() drops that part of the newest one.
  caf::error scan(size_t record_bytes, const std::function<caf::error(const scanned_record&)>& f,
                  uint32_t below = UINT32_MAX);
  /// Cuts the newest generation's file after the last whole record the last scan() of it
  /// met, so that appends follow it. Nothing may be buffered.
  caf::error cut_torn_tail();
  /// Writes the buffered records to their file (synced to the disk when `sync`). A database
  /// may store their pointers after this returns: a SIGKILL then loses none of them.
  caf::error write_out(bool sync);
  /// Reads the record `p` names into `record`; errc::corrupt_file when it is not `key`'s
  /// record, errc::io_error when it cannot be read.
  caf::error read(const value_pointer& p, std::string_view key, std::string& record);
  /// The key of the record `p` names; errc::corrupt_file or errc::io_error as read().
  caf::expected<std::string> key_at(const value_pointer& p);

  /// The bytes a record of `key` with `record_bytes` of row takes in the log.
  static uint32_t record_length(size_t key_bytes, size_t record_bytes);

  /// Starts a new generation: appends go to a new file from now on. The buffer must be empty.
  caf::expected<uint32_t> start_generation();
  /// Deletes the files of every generation below `generation`, whose records no pointer may
  /// name any longer.
  caf::error drop_generations_below(uint32_t generation);
  uint32_t generation() const { return current_; }
  /// The oldest generation whose file the log holds.
  uint32_t oldest_generation() const { return files_.empty() ? current_ : files_.begin()->first; }

  /// Counts `bytes` of records that no pointer names (replaced or removed).
  void discard(uint64_t bytes) { garbage_ += bytes; }
  void set_garbage(uint64_t bytes) { garbage_ = bytes; }
  uint64_t garbage() const { return garbage_; }
  /// Bytes of every generation, written or buffered.
  uint64_t bytes() const;
  /// Bytes of every generation written out: what read() may reach.
  uint64_t written_bytes() const;

private:
  struct file {
    int fd = -1;
    /// Bytes written out: a read never goes past them.
    std::atomic<uint64_t> size = 0;
  };
  caf::error open_file(uint32_t generation);
  /// The `p.length` bytes `p` names into `record`, unchecked; errors name `key`.
  caf::error read_bytes(const value_pointer& p, std::string_view key, std::string& record);
  void close_all();

  std::string dir_;
  /// By generation; current_'s file takes the appends.
  std::map<uint32_t, file> files_;
  uint32_t current_ = 0;
  std::string buffer_;
  uint64_t garbage_ = 0;
  /// Where the last scan of the newest generation met its last whole record's end.
  std::optional<uint64_t> scanned_end_;
};

} // namespace darcy::stores
