// The base of the stores that keep their rows elsewhere (LevelDB, Redis) behind a memory_store
// cache with a byte budget: the cache, its recency order and dirty marks, admission of new
// rows, and the lookup and update every such store runs. A backend supplies load (bring rows
// into the cache) and settle (write back what is due, evict past the budget).
#pragma once

#include <chrono>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "messages/embedding/embedding_config.hpp"
#include "stores/embedding/admission.hpp"
#include "stores/embedding/memory_store.hpp"

namespace darcy::stores {

class write_behind_store : public embedding_store {
public:
  size_t dim() const override { return cfg_.dim; }
  const de_config& config() const { return cfg_; }
  size_t slot_count() const override { return cache_->slot_count(); }

  using embedding_store::lookup;
  using embedding_store::update;
  /// Checks the arguments, loads the rows (creating missing ones unless read-only), copies
  /// them out (a key still missing reads cfg.default_value in read-only mode when set, its
  /// initial row otherwise), counts the lookup on each row, then settles.
  caf::error lookup(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<float> out) override;
  /// Checks the arguments, loads the rows (creating missing ones unless admission decides),
  /// applies the gradients of the rows present (the others count as dropped updates), then
  /// settles.
  caf::error update(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<const float> grads, int64_t step) override;
  store_stats stats() const override;
  caf::error scan(const std::function<void(std::string_view, std::span<const float>)>& f) override {
    return export_rows([&](const row_record& r) { f(r.key, r.values); });
  }

  /// Rows the cache may hold under the byte budget, and holds now.
  size_t cache_capacity() const { return capacity_; }
  size_t cached_rows() const { return cache_->size(); }

protected:
  using time_point = std::chrono::steady_clock::time_point;

  /// A cached row's place in the recency order and its write-back state.
  struct entry {
    std::list<std::string>::iterator position;
    /// When the row was last read from, or written to, the backend.
    time_point fetched;
    /// When the row last became dirty.
    time_point dirty_since;
    /// Changed since the backend last saw it.
    bool dirty = false;
    /// The backend knows the row (written back at least once, or read from it).
    bool indexed = true;
  };

  /// A cache of `cfg`'s dim, initializer, optimizer and default value, with no admission and
  /// no eviction of its own (this class decides both).
  static caf::expected<std::unique_ptr<memory_store>> make_cache(const de_config& cfg);

  /// The budget holds cfg.cache_bytes / row_bytes rows, at least 16. Fails as make_admission.
  write_behind_store(de_config cfg, std::unique_ptr<memory_store> cache, size_t row_bytes);
  caf::error start_admission();

  /// Brings the rows of `keys` into the cache and touches them; a row absent from the backend
  /// is created (create_row) when `create`.
  virtual caf::error load(std::span<const std::string_view> keys, bool create) = 0;
  /// Writes back what is due and evicts down to the budget.
  virtual caf::error settle() = 0;
  /// The time that touch and mark_dirty record.
  virtual time_point now() const { return {}; }
  /// Rows of the whole table (stored in the backend or only in the cache).
  virtual uint64_t rows() const { return rows_; }
  /// Marks a row changed; a backend that writes back by age records when.
  virtual void mark_dirty(const std::string& key, entry& e, time_point at);

  /// Makes `key` the most recently used row (an entry is made for a row new to the cache).
  void touch(std::string_view key, bool dirty, time_point at);
  bool cached(std::string_view key) const;
  /// A new row from the initializer when admission lets `key` in; false when it does not.
  bool create_row(std::string_view key);
  /// Drops `key` from the cache and its entry, written back or not.
  void forget(std::string_view key);
  /// errc::dimension_mismatch unless `out` holds `keys` rows.
  caf::error check_lookup(size_t keys, std::span<const float> out) const;
  /// The least recently used keys, oldest first, whose removal leaves `keep` rows.
  std::vector<std::string> oldest(size_t keep) const;
  /// The rows changed since the backend saw them.
  std::vector<std::string> dirty_keys() const;

  de_config cfg_;
  std::unique_ptr<memory_store> cache_;
  std::list<std::string> lru_;
  std::unordered_map<std::string, entry> entries_;
  size_t capacity_ = 0;
  uint64_t rows_ = 0;
  std::unique_ptr<admission_policy> admission_;
  uint64_t dropped_updates_ = 0;
  /// The largest step an update carried.
  int64_t last_step_ = 0;
};

} // namespace darcy::stores
