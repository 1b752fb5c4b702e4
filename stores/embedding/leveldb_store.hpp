// The persistent embedding store: rows (one record each of values, slots, frequency, update
// count and last step) behind an LRU cache with a byte budget. A database it creates keeps the
// records in a value_log beside a LevelDB that holds only its format: the log is the rows'
// only record (a removal logs a record of its own), read whole when the database opens to
// build a pointer_index in memory (counted in the budget) of every row's place. A row not in
// the cache is then read with one read of the log, a key never written costs no read, and
// nothing is compacted. A database written before keeps either the rows' pointers in LevelDB
// (its index is built from them, and they are kept current) or the rows inline: reads of its
// missing rows then go to LevelDB in sorted batches, behind a filter of the keys written. Dirty
// rows are written back when the cache evicts them (by the background writer, while the caller goes
// on: one batch in flight a store, read from memory until written) and on flush(), which waits for
// that batch and writes the log out, synced (and commits one synced write batch to a LevelDB
// that holds the pointers or the rows): what was flushed survives a SIGKILL. Eviction works on the
// whole table, both tiers: TTL removes rows whose last update is more than ttl_steps behind the
// newest step (a pass every ttl_steps / 4 steps), LFU keeps the max_rows most looked-up rows once
// there are more (down to 95%, in two sequential passes over the database that hold no key list in
// memory).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/expected.hpp>

#include "messages/embedding/embedding_config.hpp"
#include "stores/embedding/background_writer.hpp"
#include "stores/embedding/key_filter.hpp"
#include "stores/embedding/pending_rows.hpp"
#include "stores/embedding/pointer_index.hpp"
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
  /// As open(cfg), with a pointer index that keeps `index_tag_bits` of a key's tag bits
  /// (open(cfg) keeps pointer_index::tag_bits): fewer only for tests, where many keys' hashes
  /// then agree in the bits kept.
  static caf::expected<std::unique_ptr<leveldb_store>> open(const de_config& cfg,
                                                            int index_tag_bits);

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
  /// Rows read from the log at a place the pointer index held, without asking LevelDB.
  uint64_t index_reads() const { return index_reads_; }
  /// Rows looked up in LevelDB by a load: none in a database whose rows are in a value log.
  uint64_t db_reads() const { return db_reads_; }
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
  /// Calls f(key, record bytes, place) for every row whose record lies in the log in a
  /// generation below `below`: from the pointers in LevelDB, or by scanning the log for the
  /// records whose places the index holds. Stops at f's first error.
  using live_record_fn =
    std::function<caf::error(std::string_view key, std::string_view record, const value_pointer&)>;
  caf::error for_each_live(const live_record_fn& f, uint32_t below = UINT32_MAX);
  /// Builds the index and counts the rows and the log's garbage from a scan of the whole log,
  /// and cuts a tail a crash left torn.
  caf::error index_from_log();
  /// Counts the rows of a database that holds their pointers or their records, and builds the
  /// index from the pointers.
  caf::error index_from_db();
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
  /// Tells the pointer index that `key`'s record now lies at `at`. `was`: the place of the
  /// record it replaces, when known; `on_disk`: whether the database held one. Reads the log
  /// only to tell two rows apart whose hashes agree in the bits the index keeps.
  caf::error index_place(std::string_view key, uint64_t hash, const value_pointer& at,
                         std::optional<value_pointer> was, bool on_disk);
  /// Reads `key`'s record into `bytes` from the place the pointer index holds for it, told
  /// apart from other keys' places by the key the record holds; `at` is that place, none when
  /// the database holds no record of `key`. A record whose key's hash the index could not have
  /// confused with `key`'s is corrupt: errc::corrupt_file.
  caf::error read_indexed(std::string_view key, uint64_t hash, std::string& bytes,
                          std::optional<value_pointer>& at);
  /// Takes what the pointer index has grown to out of the budget for rows.
  void account_index();
  /// Moves the live records into a new generation of the log once it is mostly garbage.
  /// Never called while an iterator over the database is open.
  caf::error collect_garbage();

  std::unique_ptr<leveldb::DB> db_;
  /// The records, unless the database holds them inline.
  std::unique_ptr<value_log> log_;
  /// The database holds each row's pointer into the log (it was written so); otherwise it
  /// holds only its format, and the log is the rows' only record.
  bool pointers_in_db_ = false;
  /// In a database of inline rows, every key written to it: a load asks LevelDB only for keys
  /// that may be there (most misses of a growing table are new keys).
  key_filter on_disk_;
  /// The step of the last TTL pass.
  int64_t ttl_pass_step_ = 0;
  uint64_t evicted_ = 0;
  uint64_t min_garbage_ = uint64_t{64} << 20;
  /// A record put in the log since the last write: the sampling index and the pointer index
  /// learn its place once the write has succeeded.
  struct moved_record {
    std::string key;
    value_pointer at;
    /// The place of the row's record it replaces, when known (a collection knows it).
    std::optional<value_pointer> was;
    /// The database held a record of the row before.
    bool on_disk = false;
  };
  std::vector<moved_record> moved_;
  /// The place in the log of every row the database holds (its newest record). Null for a
  /// database of inline rows.
  std::unique_ptr<pointer_index> index_;
  /// What the pointer index found last, reused from find to find.
  std::vector<value_pointer> candidates_;
  /// The record put() encodes, reused from row to row.
  std::string record_;
  /// load()'s buffers, reused from call to call.
  std::vector<uint64_t> load_hashes_;
  std::vector<uint32_t> load_missing_;
  std::vector<row_locator> load_located_;
  std::vector<std::string_view> load_wanted_;
  std::string load_bytes_;
  std::vector<float> load_values_, load_slots_;
  uint64_t collections_ = 0;
  uint64_t located_reads_ = 0;
  uint64_t index_reads_ = 0;
  uint64_t db_reads_ = 0;
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
