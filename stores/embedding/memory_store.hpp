// The in-memory embedding store: an open-addressing table (linear probing, backward-shift
// deletion) over a 64-bit hash of the key, which keeps the full key so that collisions resolve
// exactly; keys of up to 14 bytes sit inline in the index. Each row (bookkeeping, values,
// optimizer slots) is one contiguous block in huge-page chunks: no per-row heap allocation, and
// a row's address never changes while the row exists, unless shrink() moves it.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "compute/hash.hpp"
#include "compute/rules/bound_rule.hpp"
#include "messages/embedding/embedding_config.hpp"
#include "stores/embedding/admission.hpp"
#include "stores/embedding/embedding_store.hpp"
#include "stores/embedding/huge_pages.hpp"
#include "stores/embedding/row_chunks.hpp"

namespace darcy::stores {

struct memory_store_options {
  size_t dim = 0;
  initializer_config init;
  optimizer_config optimizer;
  admission_config admission;
  eviction_config eviction;
  /// Lookups of missing keys read `default_value` (empty: the initial vector) without growing;
  /// updates are refused.
  bool read_only = false;
  std::vector<float> default_value;
  /// Weighs rows in the sampling index (see embedding_store::sample_metadata).
  sampler_config sampler;
  /// Tests inject a colliding hash; everything else keeps the default.
  uint64_t (*hash)(std::string_view) = compute::hash_key;
};

/// Per-row bookkeeping kept beside the values.
struct row_meta {
  /// Lookups that hit or created this row.
  uint64_t frequency = 0;
  /// Optimizer updates applied (Adam's per-row step).
  uint64_t updates = 0;
  /// Global step of the last update (the store's current step when the row was created).
  int64_t last_update = 0;
  /// The store's batch clock at the last lookup or update (for LRU).
  uint64_t last_access = 0;
  uint32_t key_offset = 0;
  uint32_t key_size = 0;
};

/// A row as stored; spans point into the store and stay valid until the row is erased.
struct row_ref {
  std::string_view key;
  std::span<float> values;
  std::span<float> slots;
  row_meta* meta = nullptr;
  /// The row's number in the store, below row_slots(), stable while the row exists; a number
  /// freed by erase is given to a later row.
  uint32_t index = 0;
};

class memory_store : public embedding_store {
public:
  /// Fails with errc::invalid_config for dim 0, an invalid initializer, or an update rule that
  /// does not bind (compute::bind_rule: errc::unknown_rule for a rule this process does not know).
  static caf::expected<std::unique_ptr<memory_store>> make(memory_store_options opts);

  size_t dim() const override { return opts_.dim; }
  using embedding_store::lookup;
  using embedding_store::update;
  caf::error lookup(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<float> out) override;
  caf::error update(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<const float> grads, int64_t step) override;
  store_stats stats() const override;
  caf::error scan(const std::function<void(std::string_view, std::span<const float>)>& f) override {
    for_each([&](const row_ref& r) { f(r.key, r.values); });
    return {};
  }
  size_t slot_floats() const override { return slot_floats_; }
  /// The table's update rule, bound to its parameters.
  const compute::bound_rule& rule() const { return rule_; }
  caf::error export_rows(const std::function<void(const row_record&)>& f) override;
  caf::error import_row(const row_record& row) override;
  caf::error export_keys(std::span<const std::string_view> keys,
                         const std::function<void(const row_record&)>& found,
                         const std::function<void(std::string_view)>& missing) override;
  caf::error remove_rows(std::span<const std::string_view> keys) override {
    for (auto key : keys)
      erase(key);
    return {};
  }

  size_t size() const { return size_; }

  /// The most a row with a key of `key_bytes` costs a store of `dim` values and `slot_floats`
  /// floats of rule state in steady state: its block, its share of an index that may be only 5/16
  /// full, its key in an arena that may be a quarter live, and its free-list entry. stats().bytes
  /// stays within size() times this (plus the 2 MiB chunk being filled) for keys no longer.
  static size_t max_row_bytes(size_t dim, size_t slot_floats, size_t key_bytes);

  /// The row of `key`, if present; does not count as a lookup.
  std::optional<row_ref> find(std::string_view key);
  /// find for a batch, as row numbers: rows[k] is keys[k]'s row (row_ref::index) or no_row,
  /// and each row found has its block prefetched. `hashes` holds compute::hash_key of every
  /// key; `rows` is as long as `keys`. The index is probed a few keys ahead, so that the cache
  /// misses of a batch overlap. Counts nothing.
  void locate(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
              std::span<uint32_t> rows);

  /// The row of `key`, created from the initializer when missing (even in read-only mode, and
  /// without consulting admission).
  row_ref find_or_insert(std::string_view key);

  /// The row numbered `index` (row_ref::index), which must exist.
  row_ref row(uint32_t index) { return ref(index); }
  /// Applies gradients to rows by number with the store's update rule at `step`, as update does
  /// for their keys: the row numbered rows[k] takes grads[k * dim, (k + 1) * dim) (finite), and
  /// a row of no_row is passed over. Rows must be distinct.
  void update_rows(std::span<const uint32_t> rows, std::span<const float> grads, int64_t step);
  /// The rule's reaction to a training lookup of the row numbered `index` (update_rule::
  /// on_lookup, at the latest step the store has seen); false, with nothing done, when the rule
  /// does not react. lookup calls it for each key counted.
  bool react_on_lookup(uint32_t index);
  /// import_row, answering the row written.
  caf::expected<row_ref> put_row(const row_record& row);

  /// Hints that the block of the row numbered `index` will be read soon.
  void prefetch_row(uint32_t index) const { __builtin_prefetch(rows_.at(index)); }
  /// Hints that the whole block of the row numbered `index` (meta, values, slots) will be read.
  void prefetch_block(uint32_t index) const {
    auto* block = rows_.at(index);
    for (size_t at = 0; at < rows_.row_bytes(); at += 64)
      __builtin_prefetch(block + at);
  }
  /// Hints that the key of the row numbered `index`, and the index slot it hashes to, will be
  /// read soon; its block should have been fetched first (prefetch_row).
  void prefetch_key(uint32_t index);

  /// Rows that have storage now: every row_ref::index is below this.
  size_t row_slots() const { return rows_.rows(); }
  /// The key of the row numbered `index`, which must exist.
  std::string_view key_at(uint32_t index) { return key_of(index); }

  /// Gives back the row storage that max(`keep_rows`, size()) rows do not need, and halves the
  /// index while it would stay at most 5/8 full of them. The rows in the chunks given back move
  /// to free rows below: moved(from, to) is called for each, after which row number `from`, and
  /// every row_ref taken before, are stale. Answers the rows moved.
  size_t shrink(size_t keep_rows, const std::function<void(uint32_t from, uint32_t to)>& moved);

  /// Removes `key`; false when absent. May move the other rows' keys: a row_ref::key taken
  /// before is stale after an erase.
  bool erase(std::string_view key);

  /// Calls f(row_ref) for every row, in no particular order. f must not insert or erase.
  template <class F>
  void for_each(F f) {
    for (auto& slot : index_)
      if (slot.row != empty)
        f(ref(slot.row));
  }

  /// The row number of no row (locate).
  static constexpr uint32_t no_row = UINT32_MAX;

private:
  static constexpr uint32_t empty = no_row;
  /// Bytes of a key kept inline in its index slot; longer keys are compared in the arena.
  static constexpr size_t inline_key_bytes = 14;
  static_assert(inline_key_bytes <= 16, "equal_short compares at most 16 bytes");

  memory_store(memory_store_options opts, compute::bound_rule rule);

  uint64_t exact_frequency(std::string_view key, uint64_t stored) override;

  size_t stride() const { return opts_.dim + slot_floats_; }
  /// A row's block: its row_meta, then dim values, then the optimizer slots.
  row_meta& meta_of(uint32_t row) { return *reinterpret_cast<row_meta*>(rows_.at(row)); }
  float* values_of(uint32_t row) {
    return reinterpret_cast<float*>(rows_.at(row) + sizeof(row_meta));
  }
  std::string_view key_of(uint32_t row) {
    auto& m = meta_of(row);
    return {keys_.data() + m.key_offset, m.key_size};
  }
  row_ref ref(uint32_t row);
  uint64_t hash(std::string_view key) const { return opts_.hash(key); }

  /// Index slot holding `key`, or the empty slot where it would go.
  size_t probe(std::string_view key, uint64_t hash, bool& found);
  /// Calls visit(k, row) for each key in order, where row is the key's row when it was located
  /// (a few keys ahead, with its first `bytes` prefetched) or `empty`; `hashes` holds
  /// opts_.hash of every key. Only visit may create rows.
  template <class Visit>
  void for_each_located(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                        size_t bytes, Visit&& visit);
  /// lookup, once `hashes` holds opts_.hash of every key.
  caf::error lookup_hashed(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                           std::span<float> out);
  /// update, once `hashes` is empty or holds opts_.hash of every key.
  caf::error update_hashed(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                           std::span<const float> grads, int64_t step);
  uint32_t allocate_row();
  /// Rehashes the index into `slots` slots (a power of two that holds every row).
  void resize_index(size_t slots);
  row_ref insert_at(size_t slot, std::string_view key, uint64_t hash);
  /// Applies TTL, then the row limit; runs at the end of a batch, never inside one.
  void evict();
  /// Counts an update of the row numbered `row` by `grad` (dim floats, which must stay valid
  /// until apply_staged) and stages it; the rule runs once staged_updates are.
  void stage_update(uint32_t row, const float* grad, int64_t step);
  /// Runs the rule over the staged updates.
  void apply_staged(int64_t step);
  static constexpr size_t staged_updates = 64;
  /// Rewrites the key arena without erased keys once they are more than half of it.
  void compact_keys();

  memory_store_options opts_;
  compute::bound_rule rule_;
  size_t slot_floats_ = 0;
  size_t size_ = 0;
  /// The low 32 bits of the key's hash beside its row, and a short key itself, so that a hit
  /// reads one slot and one row block. key_size is long_key when the key is in the arena only.
  struct slot {
    static constexpr uint8_t long_key = 0xFF;
    uint32_t tag = 0;
    uint32_t row = empty;
    uint8_t key_size = 0;
    char key[inline_key_bytes + 1] = {};
  };
  static_assert(sizeof(slot) == 24);
  /// The home of the key in index slot `s` of an index of mask + 1 slots.
  size_t home_of(const slot& s, size_t mask);
  /// a[0, n) == b[0, n) for n <= 16, without a call: two overlapping loads of 8, 4 or 1 bytes.
  static bool equal_short(const char* a, const char* b, size_t n) {
    auto load = [](const char* p, auto word) {
      std::memcpy(&word, p, sizeof(word));
      return word;
    };
    if (n >= 8)
      return load(a, uint64_t{}) == load(b, uint64_t{}) &&
             load(a + n - 8, uint64_t{}) == load(b + n - 8, uint64_t{});
    if (n >= 4)
      return load(a, uint32_t{}) == load(b, uint32_t{}) &&
             load(a + n - 4, uint32_t{}) == load(b + n - 4, uint32_t{});
    return n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]);
  }
  bool holds(const slot& s, uint32_t tag, std::string_view key) {
    if (s.tag != tag)
      return false;
    if (s.key_size != slot::long_key)
      return s.key_size == key.size() && equal_short(s.key, key.data(), key.size());
    return key_of(s.row) == key;
  }
  /// Capacity is a power of two, at most 3/4 full.
  std::vector<slot, huge_page_allocator<slot>> index_;
  row_chunks rows_;
  std::vector<uint32_t> free_rows_;
  uint32_t next_row_ = 0;
  std::string keys_;
  size_t key_garbage_ = 0;
  std::unique_ptr<admission_policy> admission_;
  uint64_t tick_ = 0;
  int64_t current_step_ = 0;
  uint64_t evictions_ = 0;
  uint64_t dropped_updates_ = 0;
  /// Per-batch scratch space of lookup(), kept to avoid allocating per call.
  std::vector<uint64_t> scratch_hashes_;
  std::vector<uint32_t> scratch_rows_;
  /// Rows whose update is staged for the rule, at most staged_updates.
  std::vector<compute::row_update> scratch_updates_;
};

} // namespace darcy::stores
