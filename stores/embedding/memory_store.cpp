#include "stores/embedding/memory_store.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "compute/initializer.hpp"
#include "compute/rules/rule_registry.hpp"
#include "messages/error.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::stores {

namespace {

/// The low 32 bits of the hash, whose low bits are also the key's home slot: an index of up
/// to 2^32 slots moves keys without hashing them again.
uint32_t tag_of(uint64_t hash) {
  return static_cast<uint32_t>(hash);
}

size_t row_block_bytes(size_t floats) {
  // Blocks start on cache lines, so a row's bookkeeping and values span as few as possible.
  return (sizeof(row_meta) + floats * sizeof(float) + 63) / 64 * 64;
}

} // namespace

caf::expected<std::unique_ptr<memory_store>> memory_store::make(memory_store_options opts) {
  if (opts.dim == 0)
    return make_error(errc::invalid_config, "embedding dim must be > 0");
  if (!opts.default_value.empty() && opts.default_value.size() != opts.dim)
    return make_error(errc::invalid_config, "default_value must have dim values");
  if (auto err = compute::validate(opts.init))
    return make_error(err);
  auto rule = compute::bind_rule(opts.optimizer, opts.dim, compute::rule_registry::global());
  if (!rule)
    return make_error(rule.error());
  if (auto err = validate(opts.eviction))
    return err;
  auto admission = make_admission(opts.admission);
  if (!admission)
    return std::move(admission.error());
  std::unique_ptr<memory_store> store{new memory_store(std::move(opts), std::move(*rule))};
  store->admission_ = std::move(*admission);
  return store;
}

memory_store::memory_store(memory_store_options opts, compute::bound_rule rule)
  : opts_(std::move(opts)),
    rule_(std::move(rule)),
    slot_floats_(rule_.slot_floats()),
    index_(16),
    rows_(row_block_bytes(opts_.dim + slot_floats_)) {
  set_sampler(opts_.sampler);
}

uint64_t memory_store::exact_frequency(std::string_view key, uint64_t stored) {
  auto row = find(key);
  return row ? row->meta->frequency : stored;
}

size_t memory_store::max_row_bytes(size_t dim, size_t slot_floats, size_t key_bytes) {
  // A free-list entry in a vector that may be half used.
  return row_block_bytes(dim + slot_floats) + sizeof(slot) * 16 / 5 + 4 * key_bytes +
         2 * sizeof(uint32_t);
}

row_ref memory_store::ref(uint32_t row) {
  auto values = values_of(row);
  return {key_of(row), {values, opts_.dim}, {values + opts_.dim, slot_floats_}, &meta_of(row), row};
}

void memory_store::prefetch_key(uint32_t index) {
  auto key = key_of(index);
  __builtin_prefetch(&index_[hash(key) & (index_.size() - 1)]);
}

size_t memory_store::probe(std::string_view key, uint64_t hash, bool& found) {
  auto mask = index_.size() - 1;
  auto tag = tag_of(hash);
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    auto& s = index_[i];
    if (s.row == empty) {
      found = false;
      return i;
    }
    if (holds(s, tag, key)) {
      found = true;
      return i;
    }
  }
}

uint32_t memory_store::allocate_row() {
  if (!free_rows_.empty()) {
    auto row = free_rows_.back();
    free_rows_.pop_back();
    return row;
  }
  auto row = next_row_++;
  if (row >= rows_.rows())
    rows_.grow();
  return row;
}

void memory_store::resize_index(size_t slots) {
  decltype(index_) old(slots);
  old.swap(index_);
  auto mask = index_.size() - 1;
  for (auto& s : old) {
    if (s.row == empty)
      continue;
    auto i = home_of(s, mask);
    while (index_[i].row != empty)
      i = (i + 1) & mask;
    index_[i] = s;
  }
}

size_t memory_store::home_of(const slot& s, size_t mask) {
  return mask <= UINT32_MAX ? s.tag & mask : hash(key_of(s.row)) & mask;
}

std::optional<row_ref> memory_store::find(std::string_view key) {
  bool found = false;
  auto i = probe(key, hash(key), found);
  if (!found)
    return std::nullopt;
  return ref(index_[i].row);
}

row_ref memory_store::find_or_insert(std::string_view key) {
  auto h = hash(key);
  bool found = false;
  auto i = probe(key, h, found);
  return found ? ref(index_[i].row) : insert_at(i, key, h);
}

row_ref memory_store::insert_at(size_t i, std::string_view key, uint64_t hash) {
  if ((size_ + 1) * 4 > index_.size() * 3) {
    resize_index(index_.size() * 2);
    bool found = false;
    i = probe(key, hash, found);
  }
  auto row = allocate_row();
  auto& meta = *new (rows_.at(row)) row_meta{};
  meta.key_offset = static_cast<uint32_t>(keys_.size());
  meta.key_size = static_cast<uint32_t>(key.size());
  meta.last_update = current_step_;
  meta.last_access = tick_;
  keys_.append(key);
  auto& s = index_[i];
  s = slot{tag_of(hash), row};
  if (key.size() <= inline_key_bytes) {
    s.key_size = static_cast<uint8_t>(key.size());
    std::memcpy(s.key, key.data(), key.size());
  } else {
    s.key_size = slot::long_key;
  }
  ++size_;
  auto r = ref(row);
  compute::initialize_row(opts_.init, hash, r.values);
  rule_.init_slots(r.slots);
  sampling_set(key, 0);
  return r;
}

void memory_store::evict() {
  auto& ev = opts_.eviction;
  if (ev.kind == eviction_kind::ttl) {
    std::vector<std::string> expired;
    for_each([&](const row_ref& r) {
      if (current_step_ - r.meta->last_update > ev.ttl_steps)
        expired.emplace_back(r.key);
    });
    for (auto& key : expired) {
      erase(key);
      erased(key);
    }
    evictions_ += expired.size();
    compact_keys();
    return;
  }
  if ((ev.kind != eviction_kind::lfu && ev.kind != eviction_kind::lru) || size_ <= ev.max_rows)
    return;
  // Evict 5% below the limit, so that a stream of new keys does not scan on every batch.
  auto target = ev.max_rows - ev.max_rows / 20;
  std::vector<std::pair<uint64_t, uint32_t>> scored;
  scored.reserve(size_);
  for (auto& s : index_)
    if (s.row != empty) {
      auto& m = meta_of(s.row);
      scored.emplace_back(ev.kind == eviction_kind::lfu ? m.frequency : m.last_access, s.row);
    }
  auto victims = size_ - target;
  std::nth_element(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(victims),
                   scored.end());
  std::vector<std::string> keys;
  for (size_t v = 0; v < victims; ++v)
    keys.emplace_back(key_of(scored[v].second));
  for (auto& key : keys) {
    erase(key);
    erased(key);
  }
  evictions_ += victims;
  compact_keys();
}

void memory_store::compact_keys() {
  if (key_garbage_ * 2 <= keys_.size())
    return;
  // Room for as much garbage as the live keys before the next compaction: the arena is not
  // reallocated between two compactions unless the live keys grow.
  std::string fresh;
  fresh.reserve(2 * (keys_.size() - key_garbage_));
  for (auto& s : index_) {
    if (s.row == empty)
      continue;
    auto& m = meta_of(s.row);
    auto offset = fresh.size();
    fresh.append(keys_, m.key_offset, m.key_size);
    m.key_offset = static_cast<uint32_t>(offset);
  }
  keys_.swap(fresh);
  key_garbage_ = 0;
}

size_t memory_store::shrink(size_t keep_rows,
                            const std::function<void(uint32_t, uint32_t)>& moved) {
  keep_rows = std::max(keep_rows, size_);
  auto per_chunk = rows_.rows_per_chunk();
  auto keep_chunks = (keep_rows + per_chunk - 1) / per_chunk;
  size_t moves = 0;
  // A tier evicts a 32nd of its rows at a time (write_behind_store::settle), so that a batch
  // seldom adds rows past the chunks kept; one that does costs a chunk and the move of its rows.
  if (rows_.chunks() > keep_chunks) {
    auto limit = static_cast<uint32_t>(keep_chunks * per_chunk);
    // Rows at and past `limit` move into the free rows below it, of which there are at least
    // as many as of them: size_ <= limit.
    std::vector<uint32_t> holes;
    std::vector<bool> free_above(next_row_ > limit ? next_row_ - limit : 0);
    for (auto row : free_rows_) {
      if (row < limit)
        holes.push_back(row);
      else
        free_above[row - limit] = true;
    }
    auto mask = index_.size() - 1;
    for (auto from = limit; from < next_row_; ++from) {
      if (free_above[from - limit])
        continue;
      auto to = holes.back();
      holes.pop_back();
      std::memcpy(rows_.at(to), rows_.at(from), rows_.row_bytes());
      auto i = hash(key_of(to)) & mask;
      while (index_[i].row != from)
        i = (i + 1) & mask;
      index_[i].row = to;
      moved(from, to);
      ++moves;
    }
    free_rows_ = std::move(holes);
    next_row_ = std::min(next_row_, limit);
    rows_.shrink(keep_chunks);
  }
  // Halved, the index is at most 5/8 full: a batch's new rows past keep_rows do not grow it
  // straight back.
  auto slots = index_.size();
  while (slots > 16 && keep_rows * 16 < slots * 5)
    slots /= 2;
  if (slots < index_.size())
    resize_index(slots);
  return moves;
}

bool memory_store::erase(std::string_view key) {
  bool found = false;
  auto i = probe(key, hash(key), found);
  if (!found)
    return false;
  sampling_remove(key);
  auto row = index_[i].row;
  key_garbage_ += meta_of(row).key_size;
  free_rows_.push_back(row);
  --size_;
  // Backward-shift deletion keeps every remaining key reachable from its home slot.
  auto mask = index_.size() - 1;
  for (auto j = (i + 1) & mask; index_[j].row != empty; j = (j + 1) & mask) {
    auto home = home_of(index_[j], mask);
    if (((j - home) & mask) >= ((j - i) & mask)) {
      index_[i] = index_[j];
      i = j;
    }
  }
  index_[i] = slot{};
  // A cache that erases as it goes (a write-behind tier) would otherwise grow its arena by
  // every key it ever held.
  if (key_garbage_ >= 4096)
    compact_keys();
  return true;
}

caf::error memory_store::lookup(std::span<const std::string_view> keys,
                                std::span<const uint64_t> hashes, std::span<float> out) {
  if (hashes.size() != keys.size() || opts_.hash != compute::hash_key) {
    // A test's colliding hash: the caller's hashes are of compute::hash_key.
    scratch_hashes_.resize(keys.size());
    for (size_t k = 0; k < keys.size(); ++k)
      scratch_hashes_[k] = hash(keys[k]);
    hashes = scratch_hashes_;
  }
  return lookup_hashed(keys, hashes, out);
}

template <class Visit>
void memory_store::for_each_located(std::span<const std::string_view> keys,
                                    std::span<const uint64_t> hashes, size_t bytes, Visit&& visit) {
  // A software pipeline, so that cache misses overlap instead of queueing while no more are in
  // flight than the core can track: key k + 2 * ahead has its home slot prefetched, key
  // k + ahead is located (by tag and inline key) and its first `bytes` of row block prefetched,
  // and key k is visited. A key missing when located may be created by an earlier duplicate
  // before its visit, so visit must probe a miss again; only visit creates rows (which may grow
  // the index).
  constexpr size_t ahead = 16;
  auto n = keys.size();
  auto prefetch_slot = [&](size_t k) {
    // A 24-byte slot may straddle two cache lines.
    auto* home = reinterpret_cast<const char*>(&index_[hashes[k] & (index_.size() - 1)]);
    __builtin_prefetch(home);
    __builtin_prefetch(home + sizeof(slot) - 1);
  };
  auto locate = [&](size_t k) {
    auto mask = index_.size() - 1;
    auto tag = tag_of(hashes[k]);
    for (size_t i = hashes[k] & mask; index_[i].row != empty; i = (i + 1) & mask)
      if (holds(index_[i], tag, keys[k])) {
        auto* p = rows_.at(index_[i].row);
        for (size_t line = 0; line < bytes; line += 64)
          __builtin_prefetch(p + line, 1);
        return index_[i].row;
      }
    return empty;
  };
  auto& located = scratch_rows_;
  located.assign(n, empty);
  for (size_t k = 0; k < std::min(n, 2 * ahead); ++k)
    prefetch_slot(k);
  for (size_t k = 0; k < std::min(n, ahead); ++k)
    located[k] = locate(k);
  for (size_t k = 0; k < n; ++k) {
    if (k + 2 * ahead < n)
      prefetch_slot(k + 2 * ahead);
    if (k + ahead < n)
      located[k + ahead] = locate(k + ahead);
    visit(k, located[k]);
  }
}

void memory_store::locate(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                          std::span<uint32_t> rows) {
  if (opts_.hash != compute::hash_key) {
    for (size_t k = 0; k < keys.size(); ++k) {
      auto r = find(keys[k]);
      rows[k] = r ? r->index : empty;
    }
    return;
  }
  for_each_located(keys, hashes, rows_.row_bytes(), [&](size_t k, uint32_t row) { rows[k] = row; });
}

caf::error memory_store::lookup_hashed(std::span<const std::string_view> keys,
                                       std::span<const uint64_t> hashes, std::span<float> out) {
  auto dim = opts_.dim;
  if (out.size() != keys.size() * dim)
    return make_error(errc::dimension_mismatch, std::to_string(keys.size()) + " keys of dim " +
                                                  std::to_string(dim) + " need " +
                                                  std::to_string(keys.size() * dim) +
                                                  " floats, got " + std::to_string(out.size()));
  ++tick_;
  if (opts_.read_only) {
    for (size_t k = 0; k < keys.size(); ++k) {
      auto dest = out.subspan(k * dim, dim);
      if (auto r = find(keys[k]))
        std::copy_n(r->values.data(), dim, dest.data());
      else if (!opts_.default_value.empty())
        std::copy_n(opts_.default_value.data(), dim, dest.data());
      else
        compute::initialize_row(opts_.init, hash(keys[k]), dest);
    }
    return {};
  }
  for_each_located(keys, hashes, sizeof(row_meta) + dim * sizeof(float),
                   [&](size_t k, uint32_t row) {
                     auto dest = out.subspan(k * dim, dim);
                     if (row == empty) {
                       bool found = false;
                       auto i = probe(keys[k], hashes[k], found);
                       if (found) {
                         row = index_[i].row;
                       } else if (admission_ && !admission_->admit(keys[k], hashes[k])) {
                         compute::initialize_row(opts_.init, hashes[k], dest);
                         return;
                       } else {
                         if (admission_)
                           admission_->admitted(keys[k]);
                         insert_at(i, keys[k], hashes[k]);
                         row = index_[probe(keys[k], hashes[k], found)].row;
                       }
                     }
                     auto& meta = meta_of(row);
                     if (auto times = lookup_count(k); times > 0) {
                       sampling_counted(keys[k], meta.frequency, times);
                       meta.frequency += times;
                       react_on_lookup(row);
                     }
                     meta.last_access = tick_;
                     std::memcpy(dest.data(), values_of(row), dim * sizeof(float));
                   });
  evict();
  return {};
}

caf::error memory_store::update(std::span<const std::string_view> keys,
                                std::span<const uint64_t> hashes, std::span<const float> grads,
                                int64_t step) {
  if (hashes.size() != keys.size() || opts_.hash != compute::hash_key)
    hashes = {};
  return update_hashed(keys, hashes, grads, step);
}

caf::error memory_store::update_hashed(std::span<const std::string_view> keys,
                                       std::span<const uint64_t> hashes,
                                       std::span<const float> grads, int64_t step) {
  auto dim = opts_.dim;
  if (auto err = check_gradients("", opts_.read_only, dim, keys.size(), grads))
    return err;
  if (hashes.empty()) {
    scratch_hashes_.resize(keys.size());
    for (size_t k = 0; k < keys.size(); ++k)
      scratch_hashes_[k] = hash(keys[k]);
    hashes = scratch_hashes_;
  }
  ++tick_;
  current_step_ = std::max(current_step_, step);
  scratch_updates_.clear();
  for_each_located(keys, hashes, sizeof(row_meta) + stride() * sizeof(float),
                   [&](size_t k, uint32_t row) {
                     if (row == empty) {
                       bool found = false;
                       auto i = probe(keys[k], hashes[k], found);
                       if (found) {
                         row = index_[i].row;
                       } else if (admission_) {
                         ++dropped_updates_;
                         return;
                       } else {
                         row = insert_at(i, keys[k], hashes[k]).index;
                       }
                     }
                     stage_update(row, grads.data() + k * dim, step);
                   });
  apply_staged(step);
  evict();
  return {};
}

void memory_store::stage_update(uint32_t row, const float* grad, int64_t step) {
  auto r = ref(row);
  scratch_updates_.push_back({r.values.data(), r.slots.data(), grad, ++r.meta->updates,
                              r.meta->frequency, r.meta->last_update});
  r.meta->last_update = step;
  r.meta->last_access = tick_;
  // The rule runs on rows still in the CPU's caches.
  if (scratch_updates_.size() == staged_updates)
    apply_staged(step);
}

void memory_store::apply_staged(int64_t step) {
  if (!scratch_updates_.empty())
    rule_.update(step, scratch_updates_);
  scratch_updates_.clear();
  current_step_ = std::max(current_step_, step);
}

bool memory_store::react_on_lookup(uint32_t index) {
  if (!rule_.reacts_on_lookup())
    return false;
  auto r = ref(index);
  compute::row_lookup row{r.values.data(), r.slots.data(), r.meta->frequency, r.meta->last_update};
  rule_.on_lookup(current_step_, {&row, 1});
  return true;
}

void memory_store::update_rows(std::span<const uint32_t> rows, std::span<const float> grads,
                               int64_t step) {
  scratch_updates_.clear();
  for (size_t k = 0; k < rows.size(); ++k)
    if (rows[k] != empty)
      stage_update(rows[k], grads.data() + k * opts_.dim, step);
  apply_staged(step);
}

caf::error memory_store::export_rows(const std::function<void(const row_record&)>& f) {
  for_each([&](const row_ref& r) {
    f({r.key, r.values, r.slots, r.meta->frequency, r.meta->updates, r.meta->last_update});
  });
  return {};
}

caf::error memory_store::export_keys(std::span<const std::string_view> keys,
                                     const std::function<void(const row_record&)>& found,
                                     const std::function<void(std::string_view)>& missing) {
  for (auto key : keys) {
    auto r = find(key);
    if (r)
      found(
        {r->key, r->values, r->slots, r->meta->frequency, r->meta->updates, r->meta->last_update});
    else
      missing(key);
  }
  return {};
}

caf::error memory_store::import_row(const row_record& row) {
  auto put = put_row(row);
  return put ? caf::error{} : std::move(put.error());
}

caf::expected<row_ref> memory_store::put_row(const row_record& row) {
  if (row.values.size() != opts_.dim || row.slots.size() != slot_floats_)
    return make_error(errc::dimension_mismatch,
                      "row '" + std::string{row.key} + "' has " +
                        std::to_string(row.values.size()) + " values and " +
                        std::to_string(row.slots.size()) + " slot values for dim " +
                        std::to_string(opts_.dim));
  auto r = find_or_insert(row.key);
  std::copy(row.values.begin(), row.values.end(), r.values.begin());
  std::copy(row.slots.begin(), row.slots.end(), r.slots.begin());
  sampling_set(row.key, row.frequency);
  r.meta->frequency = row.frequency;
  r.meta->updates = row.updates;
  r.meta->last_update = row.last_update;
  current_step_ = std::max(current_step_, row.last_update);
  return r;
}

store_stats memory_store::stats() const {
  store_stats s;
  s.rows = size_;
  s.cached_rows = size_;
  s.bytes = rows_.bytes() + index_.capacity() * sizeof(slot) + keys_.capacity() +
            free_rows_.capacity() * sizeof(uint32_t);
  if (admission_)
    s.bytes += admission_->bytes();
  s.raw_bytes = (keys_.size() - key_garbage_) + size_ * stride() * sizeof(float);
  s.evictions = evictions_;
  s.dropped_updates = dropped_updates_;
  return s;
}

} // namespace darcy::stores
