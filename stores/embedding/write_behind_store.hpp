// The base of the stores that keep their rows elsewhere (LevelDB, Redis) behind a memory_store
// cache with a byte budget: the cache, its recency order and dirty marks, admission of new
// rows, and the lookup and update every such store runs. A backend supplies load (bring rows
// into the cache) and settle (write back what is due, evict past the budget).
#pragma once

#include <chrono>
#include <deque>
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
  size_t slot_floats() const override { return cache_->slot_floats(); }

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
  /// Loads the rows of `keys` the backend holds into the cache (none is created, none
  /// counted) and pins each row found until a lookup reads it, or for pinned_lookups lookups;
  /// settle never evicts a pinned row. Keys past the point where pinned rows would fill half
  /// the cache are passed over. Then settles with a 32nd of the budget as headroom.
  caf::error prefetch(std::span<const std::string_view> keys,
                      std::span<const uint64_t> hashes) override;
  store_stats stats() const override;
  /// Loads the rows of `keys` into the cache (none is created), a cacheful at a time, and
  /// reads them there; settles after each load.
  caf::error export_keys(std::span<const std::string_view> keys,
                         const std::function<void(const row_record&)>& found,
                         const std::function<void(std::string_view)>& missing) override;
  caf::error scan(const std::function<void(std::string_view, std::span<const float>)>& f) override {
    return export_rows([&](const row_record& r) { f(r.key, r.values); });
  }

  /// Rows the cache may hold under the byte budget, and holds now.
  size_t cache_capacity() const { return capacity_; }
  size_t cached_rows() const { return cache_->size(); }
  /// What the memory tier holds: the cache's rows, index and keys, the rows' entries, and the
  /// admission filter. At most cfg.cache_bytes plus one 2 MiB chunk
  /// of rows once the cache is full.
  uint64_t cache_bytes() const;
  /// Keys found in the cache, and keys read from the backend (or created) instead.
  uint64_t cache_hits() const { return tier_hits_; }
  uint64_t cache_misses() const { return tier_misses_; }

protected:
  using time_point = std::chrono::steady_clock::time_point;
  uint64_t exact_frequency(std::string_view key, uint64_t stored) override;
  static constexpr uint32_t none = UINT32_MAX;
  static constexpr size_t exact_lru_rows = 4096;

  /// A cached row's place in the recency order and its write-back state, kept by the row's
  /// number in the cache (row_ref::index): no allocation and no key copy per row.
  struct entry {
    /// The neighbours in the recency list (none at its ends).
    uint32_t newer = none;
    uint32_t older = none;
    /// The row is cached and in the list.
    bool live = false;
    /// Changed since the backend last saw it.
    bool dirty = false;
    /// The backend knows the row (written back at least once, or read from it).
    bool indexed = true;
    /// Counted since it came into the cache: the sampling index's frequency may lag.
    bool counted = false;
    /// links_ when the row last became the newest (in what was padding).
    uint32_t linked = 0;
    /// When the row was last read from, or written to, the backend.
    time_point fetched;
    /// When the row last became dirty.
    time_point dirty_since;
  };

  /// A cache of `cfg`'s dim, initializer, optimizer and default value, with no admission and
  /// no eviction of its own (this class decides both).
  static caf::expected<std::unique_ptr<memory_store>> make_cache(const de_config& cfg);

  /// The budget holds cfg.cache_bytes / cached_row_bytes(mean key) rows, at least 16. Fails as
  /// make_admission.
  write_behind_store(de_config cfg, std::unique_ptr<memory_store> cache);
  caf::error start_admission();
  /// Takes `bytes` of cfg.cache_bytes for something else the backend keeps in memory: the
  /// cache's rows get the rest.
  void reserve(uint64_t bytes);

  /// Brings the rows of `keys` into the cache and touches them; a row absent from the backend
  /// is created (create_row) when `create`. rows[k] is then key k's row number in the cache
  /// (row_ref::index), or `none` when it has no row; `rows` holds one number per key.
  virtual caf::error load(std::span<const std::string_view> keys, bool create,
                          std::span<uint32_t> rows) = 0;
  /// Writes back what is due and evicts down to the budget.
  virtual caf::error settle() = 0;
  /// settle, then gives back the memory the cache's rows no longer need when the budget has
  /// fallen (reserve takes more): row numbers may change, and none may be held across it.
  caf::error settle_within_budget();
  /// The time that touch and mark_dirty record.
  virtual time_point now() const { return {}; }
  /// Rows of the whole table (stored in the backend or only in the cache).
  virtual uint64_t rows() const { return rows_; }
  /// Marks a row changed; a backend that writes back by age records when.
  virtual void mark_dirty(std::string_view key, entry& e, time_point at);

  /// Makes `key`, whose row must be in the cache, the most recently used row (its entry made
  /// when new; `at` is then its fetch time), and marks it dirty when `dirty`.
  void touch(std::string_view key, bool dirty, time_point at);
  /// touch, for the row numbered `row` (row_ref::index) of `key`.
  void touch_row(uint32_t row, std::string_view key, bool dirty, time_point at);
  bool cached(std::string_view key) { return cache_->find(key).has_value(); }
  /// The cached row number of `key`, or `none`.
  uint32_t row_of(std::string_view key) {
    auto found = cache_->find(key);
    return found ? found->index : none;
  }
  /// The entry of the cached row numbered `row`, which touch_row has seen.
  entry& entry_at(uint32_t row) { return entries_[row]; }
  /// Hints that the entry of row `row` (`none` or a row touch_row has not seen: no hint) will
  /// be written soon.
  void prefetch_entry(uint32_t row) const {
    if (row < entries_.size())
      __builtin_prefetch(&entries_[row], 1);
  }
  /// The entry of a cached key; nullptr when the key is not cached. Valid until the next touch
  /// or forget.
  entry* entry_of(std::string_view key);
  /// Calls f(key, entry) for every cached row, most recently used first.
  template <class F>
  void for_each_entry(F f) const {
    for (auto row = newest_; row != none; row = entries_[row].older)
      f(cache_->key_at(row), entries_[row]);
  }
  template <class F>
  void for_each_entry(F f) {
    for (auto row = newest_; row != none; row = entries_[row].older)
      f(cache_->key_at(row), entries_[row]);
  }
  /// A new row from the initializer when admission lets `key` in: its row number, or `none`
  /// when admission keeps it out.
  uint32_t create_row(std::string_view key);
  /// Drops `key` from the cache and its entry, written back or not.
  void forget(std::string_view key);
  /// forget, for the cached row numbered `row`.
  void forget_row(uint32_t row);
  /// forget_row of each of `rows`, cold rows fetched a few at a time before they are dropped.
  void forget_rows(std::span<const uint32_t> rows);
  /// errc::dimension_mismatch unless `out` holds `keys` rows.
  caf::error check_lookup(size_t keys, std::span<const float> out) const;
  /// The least recently used keys, oldest first, whose removal leaves `keep` rows.
  std::vector<std::string> oldest(size_t keep) const;
  /// oldest, as row numbers.
  std::vector<uint32_t> oldest_rows(size_t keep) const;
  /// The rows changed since the backend saw them.
  std::vector<std::string> dirty_keys() const;

private:
  /// The most a cached row with a key of `key_bytes` costs: its share of the cache
  /// (memory_store::max_row_bytes) and of an entries_ vector that may be half used.
  size_t cached_row_bytes(size_t key_bytes) const;
  /// Counts a key entering (sign 1) or leaving (-1) the cache and sets capacity_ for the
  /// cached keys' mean length; `rows` is the count after the change.
  void account_key(std::string_view key, int sign, size_t rows);
  void unlink(uint32_t row);
  void link_newest(uint32_t row);
  /// Gives the entry (recency, pin) of the cached row numbered `from` to row `to`, free until
  /// now: the cache has moved the row.
  void move_entry(uint32_t from, uint32_t to);
  /// Points the lapse order's pins at the rows `moves` (from, to) moved them to.
  void move_pins(std::span<const std::pair<uint32_t, uint32_t>> moves);

  /// By row number; the recency list runs from newest_ to oldest_.
  std::vector<entry> entries_;
  uint32_t newest_ = none;
  uint32_t oldest_ = none;
  /// Rows made the newest so far (wrapping): a touched row that became the newest fewer than
  /// capacity_ / 8 links ago is among the newest eighth of the list, and stays where it is
  /// (its neighbours' entries, each a cache miss in a large tier, are not written). The order
  /// is then LRU up to that eighth; a tier of fewer than exact_lru_rows rows keeps it exact.
  uint32_t links_ = 0;
  /// Bytes of the cached keys.
  uint64_t key_bytes_ = 0;
  /// Bytes of the budget reserve() took.
  uint64_t reserved_bytes_ = 0;

protected:
  de_config cfg_;
  std::unique_ptr<memory_store> cache_;
  size_t capacity_ = 0;
  uint64_t rows_ = 0;
  std::unique_ptr<admission_policy> admission_;
  uint64_t dropped_updates_ = 0;
  /// Keys found in the cache, and keys a load had to read from the backend (or create).
  uint64_t tier_hits_ = 0;
  uint64_t tier_misses_ = 0;
  /// The largest step an update carried.
  int64_t last_step_ = 0;
  /// Rows below the budget that settle leaves free when a prefetch runs it: the look-ahead
  /// does the write-backs, so that the lookups it runs ahead of find room (0 otherwise; a
  /// backend's settle may not use it).
  size_t headroom_ = 0;
  /// Rows load() read from the backend, as far as the backend counts them (LevelDB does).
  uint64_t backend_reads_ = 0;

private:
  /// Drops the pins whose lookups have run out.
  void expire_pins();
  /// Whether prefetch pinned `row` and its pin has not run out.
  bool pinned(uint32_t row) const;

  /// Each key's row number during one lookup or update.
  std::vector<uint32_t> found_;
  /// Lookups so far, and the rows prefetch pinned with the lookup count past which each pin
  /// lapses. Small: at most half the cache, and empty when no one prefetches.
  uint64_t lookups_ = 0;
  std::unordered_map<uint32_t, uint64_t> pins_;
  /// The pins in the order they lapse, (lookup count, row); a pin released or renewed since
  /// stays here until its count comes, and is then passed over.
  std::deque<std::pair<uint64_t, uint32_t>> pin_order_;
  uint64_t prefetched_rows_ = 0;
};

} // namespace darcy::stores
