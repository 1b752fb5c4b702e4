#include "stores/embedding/write_behind_store.hpp"

#include <algorithm>

#include "compute/hash.hpp"
#include "compute/initializer.hpp"
#include "messages/error.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::stores {

caf::expected<std::unique_ptr<memory_store>> write_behind_store::make_cache(const de_config& cfg) {
  memory_store_options opts;
  opts.dim = cfg.dim;
  opts.init = cfg.init;
  opts.optimizer = cfg.optimizer;
  opts.default_value = cfg.default_value;
  return memory_store::make(std::move(opts));
}

write_behind_store::write_behind_store(de_config cfg, std::unique_ptr<memory_store> cache)
  : cfg_(std::move(cfg)), cache_(std::move(cache)) {
  account_key({}, 0, 0);
  set_sampler(cfg_.sampler);
}

uint64_t write_behind_store::exact_frequency(std::string_view key, uint64_t stored) {
  auto row = cache_->find(key);
  return row ? row->meta->frequency : stored;
}

size_t write_behind_store::cached_row_bytes(size_t key_bytes) const {
  return memory_store::max_row_bytes(cfg_.dim, cache_->slot_floats(), key_bytes) +
         2 * sizeof(entry);
}

void write_behind_store::account_key(std::string_view key, int sign, size_t rows) {
  if (sign > 0)
    key_bytes_ += key.size();
  else if (sign < 0)
    key_bytes_ -= key.size();
  // The budget over what a row of the cached keys' mean length costs (rounded up).
  auto mean_key = rows == 0 ? 8 : (key_bytes_ + rows - 1) / rows;
  auto for_rows = cfg_.cache_bytes > reserved_bytes_ ? cfg_.cache_bytes - reserved_bytes_ : 0;
  capacity_ = std::max<size_t>(16, for_rows / cached_row_bytes(mean_key));
}

uint64_t write_behind_store::cache_bytes() const {
  uint64_t bytes = cache_->stats().bytes + entries_.capacity() * sizeof(entry);
  if (admission_)
    bytes += admission_->bytes();
  return bytes;
}

void write_behind_store::reserve(uint64_t bytes) {
  reserved_bytes_ = bytes;
  account_key({}, 0, cache_->size());
}

caf::error write_behind_store::start_admission() {
  auto admission = make_admission(cfg_.admission);
  if (!admission)
    return std::move(admission.error());
  admission_ = std::move(*admission);
  return {};
}

void write_behind_store::mark_dirty(std::string_view, entry& e, time_point) {
  e.dirty = true;
}

void write_behind_store::unlink(uint32_t row) {
  auto& e = entries_[row];
  (e.newer == none ? newest_ : entries_[e.newer].older) = e.older;
  (e.older == none ? oldest_ : entries_[e.older].newer) = e.newer;
  e.newer = e.older = none;
}

void write_behind_store::link_newest(uint32_t row) {
  auto& e = entries_[row];
  e.linked = ++links_;
  e.newer = none;
  e.older = newest_;
  (newest_ == none ? oldest_ : entries_[newest_].newer) = row;
  newest_ = row;
}

void write_behind_store::move_entry(uint32_t from, uint32_t to) {
  if (from < entries_.size() && entries_[from].live) {
    auto& e = entries_[to] = entries_[from];
    (e.newer == none ? newest_ : entries_[e.newer].older) = to;
    (e.older == none ? oldest_ : entries_[e.older].newer) = to;
    entries_[from] = entry{};
  }
  if (auto pin = pins_.find(from); pin != pins_.end()) {
    auto until = pin->second;
    pins_.erase(pin);
    pins_[to] = until;
  }
}

void write_behind_store::move_pins(std::span<const std::pair<uint32_t, uint32_t>> moves) {
  if (pin_order_.empty() || moves.empty())
    return;
  std::unordered_map<uint32_t, uint32_t> to(moves.begin(), moves.end());
  for (auto& [until, row] : pin_order_)
    if (auto moved = to.find(row); moved != to.end())
      row = moved->second;
}

caf::error write_behind_store::settle_within_budget() {
  auto err = settle();
  std::vector<std::pair<uint32_t, uint32_t>> moves;
  cache_->shrink(capacity_, [&](uint32_t from, uint32_t to) {
    move_entry(from, to);
    moves.emplace_back(from, to);
  });
  move_pins(moves);
  if (entries_.size() > cache_->row_slots()) {
    entries_.resize(cache_->row_slots());
    entries_.shrink_to_fit();
  }
  return err;
}

void write_behind_store::touch(std::string_view key, bool dirty, time_point at) {
  if (auto found = cache_->find(key))
    touch_row(found->index, key, dirty, at);
}

void write_behind_store::touch_row(uint32_t row, std::string_view key, bool dirty, time_point at) {
  if (row >= entries_.size())
    entries_.resize(cache_->row_slots());
  auto& e = entries_[row];
  if (!e.live) {
    e = entry{};
    e.live = true;
    e.fetched = at;
    account_key(key, 1, cache_->size());
    link_newest(row);
  } else if (newest_ != row && (capacity_ < exact_lru_rows || links_ - e.linked >= capacity_ / 8)) {
    unlink(row);
    link_newest(row);
  }
  if (dirty)
    mark_dirty(key, e, at);
}

write_behind_store::entry* write_behind_store::entry_of(std::string_view key) {
  auto found = cache_->find(key);
  if (!found || found->index >= entries_.size() || !entries_[found->index].live)
    return nullptr;
  return &entries_[found->index];
}

uint32_t write_behind_store::create_row(std::string_view key) {
  if (admission_ && !admission_->admit(key, compute::hash_key(key)))
    return none;
  if (admission_)
    admission_->admitted(key);
  auto index = cache_->find_or_insert(key).index;
  sampling_set(key, 0);
  return index;
}

void write_behind_store::forget(std::string_view key) {
  if (auto row = row_of(key); row != none)
    forget_row(row);
}

void write_behind_store::forget_row(uint32_t row) {
  // A copy: erasing may move the arena the key is in.
  std::string key{cache_->key_at(row)};
  bool live = row < entries_.size() && entries_[row].live;
  // A row never counted while cached has the frequency the index holds for it.
  if (!live || entries_[row].counted)
    sampling_refresh(key, cache_->row(row).meta->frequency);
  if (!pins_.empty())
    pins_.erase(row);
  if (live) {
    unlink(row);
    entries_[row].live = false;
    account_key(key, -1, cache_->size() - 1);
  }
  cache_->erase(key);
}

void write_behind_store::forget_rows(std::span<const uint32_t> rows) {
  // Rows evicted together have not been touched for long: each would miss the CPU's caches
  // at its block, its key, and its index slot one after the other.
  constexpr size_t lanes = 16;
  for (size_t first = 0; first < rows.size(); first += lanes) {
    auto round = rows.subspan(first, std::min(lanes, rows.size() - first));
    for (auto row : round)
      cache_->prefetch_row(row);
    for (auto row : round)
      cache_->prefetch_key(row);
    for (auto row : round)
      forget_row(row);
  }
}

std::vector<std::string> write_behind_store::oldest(size_t keep) const {
  std::vector<std::string> out;
  for (auto row : oldest_rows(keep))
    out.emplace_back(cache_->key_at(row));
  return out;
}

std::vector<uint32_t> write_behind_store::oldest_rows(size_t keep) const {
  std::vector<uint32_t> out;
  for (auto row = oldest_; row != none && cache_->size() - out.size() > keep;
       row = entries_[row].newer)
    if (!pinned(row))
      out.push_back(row);
  return out;
}

std::vector<std::string> write_behind_store::dirty_keys() const {
  std::vector<std::string> out;
  for_each_entry([&](std::string_view key, const entry& e) {
    if (e.dirty)
      out.emplace_back(key);
  });
  return out;
}

caf::error write_behind_store::check_lookup(size_t keys, std::span<const float> out) const {
  if (out.size() != keys * cfg_.dim)
    return make_error(errc::dimension_mismatch, std::to_string(keys) + " keys of dim " +
                                                  std::to_string(cfg_.dim) + " need " +
                                                  std::to_string(keys * cfg_.dim) + " floats");
  return {};
}

caf::error write_behind_store::lookup(std::span<const std::string_view> keys,
                                      std::span<const uint64_t> hashes, std::span<float> out) {
  if (auto err = check_lookup(keys.size(), out))
    return err;
  found_.assign(keys.size(), none);
  if (auto err = load(keys, !cfg_.read_only, found_))
    return err;
  ++lookups_;
  if (!pins_.empty())
    for (auto row : found_)
      pins_.erase(row);
  auto at = now();
  for (size_t k = 0; k < keys.size(); ++k) {
    auto dest = out.subspan(k * cfg_.dim, cfg_.dim);
    if (found_[k] != none) {
      auto row = cache_->row(found_[k]);
      if (!cfg_.read_only) {
        // A row read but not counted stays as the backend holds it (created rows are dirty);
        // a counted one is dirty, whatever the rule's reaction changed in it.
        auto times = lookup_count(k);
        if (times > 0) {
          sampling_counted(keys[k], row.meta->frequency, times);
          row.meta->frequency += times;
          cache_->react_on_lookup(found_[k]);
        }
        touch_row(found_[k], keys[k], times > 0, at);
        if (times > 0)
          entry_at(found_[k]).counted = true;
      }
      std::copy(row.values.begin(), row.values.end(), dest.begin());
    } else if (cfg_.read_only && !cfg_.default_value.empty()) {
      std::copy(cfg_.default_value.begin(), cfg_.default_value.end(), dest.begin());
    } else {
      compute::initialize_row(cfg_.init, hashes[k], dest);
    }
  }
  return settle_within_budget();
}

caf::error write_behind_store::export_keys(std::span<const std::string_view> keys,
                                           const std::function<void(const row_record&)>& found,
                                           const std::function<void(std::string_view)>& missing) {
  // A load may evict what an earlier load of the same call brought in: half a cacheful each.
  auto chunk = std::max<size_t>(1, capacity_ / 2);
  std::vector<uint32_t> rows;
  for (size_t start = 0; start < keys.size(); start += chunk) {
    auto part = keys.subspan(start, std::min(chunk, keys.size() - start));
    rows.assign(part.size(), none);
    if (auto err = load(part, false, rows))
      return err;
    for (size_t k = 0; k < part.size(); ++k) {
      if (rows[k] == none) {
        missing(part[k]);
        continue;
      }
      auto r = cache_->row(rows[k]);
      found({part[k], r.values, r.slots, r.meta->frequency, r.meta->updates, r.meta->last_update});
    }
    if (auto err = settle_within_budget())
      return err;
  }
  return {};
}

caf::error write_behind_store::update(std::span<const std::string_view> keys,
                                      std::span<const uint64_t>, std::span<const float> grads,
                                      int64_t step) {
  if (auto err = check_gradients(cfg_, keys.size(), grads))
    return err;
  found_.assign(keys.size(), none);
  if (auto err = load(keys, !admission_, found_))
    return err;
  last_step_ = std::max(last_step_, step);
  cache_->update_rows(found_, grads, step);
  auto at = now();
  for (size_t k = 0; k < keys.size(); ++k) {
    if (found_[k] == none)
      ++dropped_updates_;
    else
      touch_row(found_[k], keys[k], true, at);
  }
  return settle_within_budget();
}

bool write_behind_store::pinned(uint32_t row) const {
  if (pins_.empty())
    return false;
  auto pin = pins_.find(row);
  return pin != pins_.end() && pin->second > lookups_;
}

void write_behind_store::expire_pins() {
  while (!pin_order_.empty() && pin_order_.front().first <= lookups_) {
    auto [until, row] = pin_order_.front();
    pin_order_.pop_front();
    if (auto pin = pins_.find(row); pin != pins_.end() && pin->second == until)
      pins_.erase(pin);
  }
}

caf::error write_behind_store::prefetch(std::span<const std::string_view> keys,
                                        std::span<const uint64_t> hashes) {
  if (auto err = embedding_store::prefetch(keys, hashes))
    return err;
  expire_pins();
  auto room = capacity_ / 2 > pins_.size() ? capacity_ / 2 - pins_.size() : 0;
  keys = keys.first(std::min(keys.size(), room));
  // A prefetch is not a lookup: the tier's hit rate stays that of the lookups.
  auto hits = tier_hits_, misses = tier_misses_, reads = backend_reads_;
  found_.assign(keys.size(), none);
  auto err = load(keys, false, found_);
  tier_hits_ = hits;
  tier_misses_ = misses;
  prefetched_rows_ += backend_reads_ - reads;
  if (err)
    return err;
  for (auto row : found_)
    if (row != none) {
      pins_[row] = lookups_ + pinned_lookups;
      pin_order_.emplace_back(lookups_ + pinned_lookups, row);
    }
  headroom_ = capacity_ / 32;
  err = settle_within_budget();
  headroom_ = 0;
  return err;
}

store_stats write_behind_store::stats() const {
  auto s = cache_->stats();
  s.rows = rows();
  s.bytes = cache_bytes();
  s.cached_rows = cache_->size();
  s.cache_capacity = capacity_;
  s.tier_hits = tier_hits_;
  s.tier_misses = tier_misses_;
  s.disk_reads = backend_reads_;
  s.prefetched_rows = prefetched_rows_;
  s.dropped_updates = dropped_updates_;
  return s;
}

} // namespace darcy::stores
