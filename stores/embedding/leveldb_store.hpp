// The persistent embedding store: rows live in LevelDB (key bytes -> one record of values,
// slots, frequency, update count and last step), behind an LRU cache with a byte budget. Reads
// of missing rows go to LevelDB in sorted batches; dirty rows are written back when the cache
// evicts them and on flush(), which commits one synced write batch: what was flushed survives
// a SIGKILL. Eviction policies (TTL, LFU, LRU) are memory-backend features.
#pragma once

#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include <caf/expected.hpp>

#include "messages/embedding/embedding_config.hpp"
#include "stores/embedding/embedding_store.hpp"
#include "stores/embedding/memory_store.hpp"

namespace leveldb {
class DB;
}

namespace darcy::stores {

class leveldb_store : public embedding_store {
public:
  /// Opens (or creates) the database at cfg.path. Fails with errc::invalid_config for a config
  /// this backend cannot serve, errc::io_error when LevelDB cannot open the path, and
  /// errc::corrupt_file when the database holds rows of another dim or optimizer.
  static caf::expected<std::unique_ptr<leveldb_store>> open(const de_config& cfg);

  ~leveldb_store() override;

  size_t dim() const override { return cfg_.dim; }
  caf::error lookup(std::span<const std::string_view> keys, std::span<float> out) override;
  caf::error update(std::span<const std::string_view> keys, std::span<const float> grads,
                    int64_t step) override;
  store_stats stats() const override;
  caf::error scan(const std::function<void(std::string_view, std::span<const float>)>& f) override;
  size_t slot_count() const override { return cache_->slot_count(); }
  caf::error export_rows(const std::function<void(const row_record&)>& f) override;
  caf::error import_row(const row_record& row) override;

  /// Writes every dirty row back in one synced batch.
  caf::error flush();

  /// Rows the cache may hold under the byte budget.
  size_t cache_capacity() const { return capacity_; }
  size_t cached_rows() const { return cache_->size(); }

private:
  leveldb_store(de_config cfg, std::unique_ptr<memory_store> cache, leveldb::DB* db);

  /// Brings the rows of `keys` into the cache: from LevelDB when stored there, from the
  /// initializer (admission permitting) otherwise. Marks them most recently used.
  caf::error load(std::span<const std::string_view> keys, bool create);
  void touch(std::string_view key, bool dirty);
  /// Writes back and drops least recently used rows until the cache fits its budget.
  caf::error shrink();
  std::string encode(const row_record& row) const;

  struct entry {
    std::list<std::string>::iterator position;
    bool dirty = false;
  };

  de_config cfg_;
  std::unique_ptr<memory_store> cache_;
  std::unique_ptr<leveldb::DB> db_;
  std::list<std::string> lru_;
  std::unordered_map<std::string, entry> entries_;
  size_t capacity_ = 0;
  uint64_t rows_ = 0;
  std::unique_ptr<admission_policy> admission_;
  uint64_t dropped_updates_ = 0;
};

} // namespace darcy::stores
