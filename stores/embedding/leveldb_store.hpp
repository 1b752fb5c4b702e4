// The persistent embedding store: rows live in LevelDB (key bytes -> one record of values,
// slots, frequency, update count and last step), behind an LRU cache with a byte budget. A
// database it creates keeps the records in a value_log and only their pointers in LevelDB, so
// that compactions move 16 bytes a row instead of the row; one written before the log keeps
// them inline and is served as it is. Reads of missing rows go to LevelDB in sorted batches
// (straight to the log for rows whose place a pointer cache, an eighth of the memory budget,
// still holds, and once the table samples, for every row: its sampling index knows them);
// dirty rows are written back when the cache evicts them (by the background writer, while the
// caller goes on: one batch in flight a store, read from memory until written) and on flush(),
// which waits for that batch, writes the log out and commits one synced write batch: what was
// flushed survives a SIGKILL. Eviction works
// on the whole table, both tiers: TTL removes rows whose last update is more than ttl_steps
// behind the newest step (a pass every ttl_steps / 4 steps), LFU keeps the max_rows most
// looked-up rows once there are more (down to 95%, in two sequential passes over the database
// that hold no key list in memory). A filter of the keys written keeps reads of new keys away
// from LevelDB.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/expected.hpp>

#include "messages/embedding/embedding_config.hpp"
#include "stores/embedding/background_writer.hpp"
#include "stores/embedding/key_filter.hpp"
#include "stores/embedding/pending_rows.hpp"
#include "stores/embedding/pointer_cache.hpp"
#include "stores/embedding/value_log.hpp"
#include "stores/embedding/write_behind_store.hpp"

namespace leveldb {
class DB;
class WriteBatch;
} // namespace leveldb

namespace darcy::stores {

class leveldb_store : public write_behind_store {
public:
  /// Opens (or creates) the database at cfg.path. Fails with errc::invalid_config for a config
  /// this backend cannot serve, errc::io_error when LevelDB cannot open the path, and
  /// errc::corrupt_file when the database holds rows of another dim or optimizer.
  static caf::expected<std::unique_ptr<leveldb_store>> open(const de_config& cfg);

  ~leveldb_store() override;

  caf::error export_rows(const std::function<void(const row_record&)>& f) override;
  caf::error import_row(const row_record& row) override;
  /// Deletes the rows of `keys` from both tiers in one synced batch (a sync's deletions); keys
  /// the table does not hold are passed over.
  caf::error remove_rows(std::span<const std::string_view> keys) override;

  /// Writes every dirty row back in one synced batch.
  caf::error flush();

  store_stats stats() const override;

  /// The value log is collected once more than half of it, and at least `bytes`, is garbage
  /// (64 MiB unless set). Without effect on a database that holds its rows inline.
  void collect_garbage_above(uint64_t bytes) { min_garbage_ = bytes; }
  /// Collections of the value log so far.
  uint64_t log_collections() const { return collections_; }
  /// Rows read from the log at the place the sampling index recorded, without asking LevelDB.
  uint64_t located_reads() const { return located_reads_; }
  /// Rows read from the log at the place the pointer cache held, without asking LevelDB.
  uint64_t pointer_reads() const { return pointer_reads_; }
  /// Rows loaded from a write-back still in flight, before the writer had written them.
  uint64_t pending_reads() const { return pending_reads_; }
  /// Fault injection: the next `count` write-backs (on the background writer or the caller's
  /// thread) fail with errc::io_error and write nothing.
  void fail_write_backs(int count) { failing_write_backs_ = count; }
  /// Write-backs of fewer rows than `rows` are written on the caller's thread: a small tier's
  /// batches of a few rows each (a restore into a budget of a few KiB a table) would cost a
  /// thread hand-off each, which on a busy machine waits for the writer to be scheduled.
  void set_min_background_rows(size_t rows) { min_background_rows_ = rows; }
  /// The write-backs handed to the background writer so far.
  uint64_t background_write_backs() const { return background_write_backs_; }
  /// Below a tier of about 128 KiB a store (a 32nd of it: 4 KiB, ten 16-dim Adagrad rows), and
  /// far below the colossal runs' batches (190 rows a store at 0.5 GiB over 208 stores).
  static constexpr size_t default_min_background_rows = 64;
  /// The share of cfg.cache_bytes the pointer cache takes (at least 4 KiB) in a database whose
  /// rows are in a value log.
  static uint64_t pointer_cache_bytes(uint64_t cache_bytes);

private:
  leveldb_store(de_config cfg, std::unique_ptr<memory_store> cache, leveldb::DB* db);

  /// Rows stored in LevelDB are read in one sorted pass.
  caf::error load(std::span<const std::string_view> keys, bool create,
                  std::span<uint32_t> rows) override;
  /// Writes back and drops least recently used rows until the cache fits its budget; then
  /// evicts from the table when its policy is due.
  caf::error settle() override;
  /// One eviction pass over both tiers when the policy is due.
  caf::error evict();
  /// Calls f(key, record) for every row in the database; stops at f's first error.
  /// `at` is the record's place in the log (nullptr for a database of inline rows).
  caf::error for_each_record(const std::function<caf::error(std::string_view key, const row_record&,
                                                            const value_pointer* at)>& f);
  /// Fills the index and records where each row lies in the log, so that loads of rows it
  /// holds read the log without a LevelDB lookup.
  caf::error fill_sampling_index(sample_index& index) override;
  /// Deletes `keys` from the database in one batch and from the cache.
  caf::error remove(const std::vector<std::string>& keys);
  /// The record of `row`, in record_ (valid until the next call).
  const std::string& encode(const row_ref& row);
  /// Adds `row` to `batch`: its record, or its record's pointer once appended to the log.
  /// `indexed`: the database holds an older record of the row, which becomes garbage.
  void put(leveldb::WriteBatch& batch, const row_ref& row, bool indexed);
  /// Writes the log's appended records out, then `batch`; errors begin with `what`. No
  /// write-back may be in flight.
  caf::error write(leveldb::WriteBatch& batch, bool sync, const std::string& what);
  /// Hands `rows` to the background writer, or writes them at once when they are fewer than
  /// min_background_rows_; finish_pending then completes them either way. The batch in flight
  /// must have finished.
  void write_behind(std::shared_ptr<pending_rows> rows);
  /// The writer's job: the records to the log, then their pointers (or the records, in a
  /// database of inline rows) to the database in one unsynced batch.
  caf::error write_pending(pending_rows& rows);
  /// Waits for the write-back in flight, if any, and tells the pointer cache and the sampling
  /// index where its rows went. When it failed, its rows are back in the cache, dirty, and
  /// the error is returned.
  caf::error finish_pending();
  /// The record of `key` from what the database stores for it (the record or its pointer,
  /// then decoded into `at`).
  caf::error row_bytes(std::string_view key, std::string_view stored, std::string& bytes,
                       value_pointer& at);
  /// Moves the live records into a new generation of the log once it is mostly garbage.
  /// Never called while an iterator over the database is open.
  caf::error collect_garbage();

  std::unique_ptr<leveldb::DB> db_;
  /// The records, unless the database holds them inline.
  std::unique_ptr<value_log> log_;
  /// Every key written to the database: a load asks LevelDB only for keys that may be there
  /// (most misses of a growing table are new keys).
  key_filter on_disk_;
  /// The step of the last TTL pass.
  int64_t ttl_pass_step_ = 0;
  uint64_t evicted_ = 0;
  uint64_t min_garbage_ = uint64_t{64} << 20;
  /// Rows put in the log since the last write, with their new places: the sampling index
  /// learns them once the write has succeeded.
  std::vector<std::pair<std::string, value_pointer>> moved_;
  /// Where rows lie in the log, for rows that left the memory tier (and those in it): the
  /// place of every record written or read, kept for as many keys as its bytes hold; every
  /// write and removal updates it. Null for a database of inline rows.
  std::unique_ptr<pointer_cache> pointers_;
  /// The record put() encodes, reused from row to row.
  std::string record_;
  uint64_t collections_ = 0;
  uint64_t located_reads_ = 0;
  uint64_t pointer_reads_ = 0;
  uint64_t pending_reads_ = 0;
  int failing_write_backs_ = 0;
  /// The write-back the background writer has (null when none), and its outcome.
  std::shared_ptr<pending_rows> pending_;
  /// The last write-back's rows, cleared, for the next one to fill: a batch's buffers are not
  /// allocated (and their pages zeroed by the kernel) anew each time.
  std::shared_ptr<pending_rows> spare_;
  background_job pending_done_;
  /// The writer's order of the batch it writes (by key), reused from batch to batch.
  std::vector<size_t> order_;
  size_t min_background_rows_ = default_min_background_rows;
  uint64_t background_write_backs_ = 0;
};

} // namespace darcy::stores
