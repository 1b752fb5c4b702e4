#include "stores/embedding/write_behind_store.hpp"

#include <algorithm>

#include "compute/finite.hpp"
#include "compute/hash.hpp"
#include "compute/initializer.hpp"
#include "messages/error.hpp"

namespace darcy::stores {

caf::expected<std::unique_ptr<memory_store>> write_behind_store::make_cache(const de_config& cfg) {
  memory_store_options opts;
  opts.dim = cfg.dim;
  opts.init = cfg.init;
  opts.optimizer = cfg.optimizer;
  opts.default_value = cfg.default_value;
  return memory_store::make(std::move(opts));
}

write_behind_store::write_behind_store(de_config cfg, std::unique_ptr<memory_store> cache,
                                       size_t row_bytes)
  : cfg_(std::move(cfg)), cache_(std::move(cache)) {
  capacity_ = std::max<size_t>(16, cfg_.cache_bytes / row_bytes);
}

caf::error write_behind_store::start_admission() {
  auto admission = make_admission(cfg_.admission);
  if (!admission)
    return std::move(admission.error());
  admission_ = std::move(*admission);
  return {};
}

void write_behind_store::mark_dirty(const std::string&, entry& e, time_point) {
  e.dirty = true;
}

void write_behind_store::touch(std::string_view key, bool dirty, time_point at) {
  auto [it, fresh] = entries_.try_emplace(std::string{key});
  if (fresh) {
    lru_.push_front(it->first);
    it->second.fetched = at;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.position);
  }
  it->second.position = lru_.begin();
  if (dirty)
    mark_dirty(it->first, it->second, at);
}

bool write_behind_store::cached(std::string_view key) const {
  return entries_.count(std::string{key}) > 0;
}

bool write_behind_store::create_row(std::string_view key) {
  if (admission_ && !admission_->admit(key, compute::hash_key(key)))
    return false;
  if (admission_)
    admission_->admitted(key);
  cache_->find_or_insert(key);
  return true;
}

void write_behind_store::forget(std::string_view key) {
  auto it = entries_.find(std::string{key});
  if (it == entries_.end())
    return;
  lru_.erase(it->second.position);
  entries_.erase(it);
  cache_->erase(key);
}

std::vector<std::string> write_behind_store::oldest(size_t keep) const {
  std::vector<std::string> out;
  for (auto it = lru_.rbegin(); it != lru_.rend() && cache_->size() - out.size() > keep; ++it)
    out.push_back(*it);
  return out;
}

std::vector<std::string> write_behind_store::dirty_keys() const {
  std::vector<std::string> out;
  for (auto& [key, e] : entries_)
    if (e.dirty)
      out.push_back(key);
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
  if (auto err = load(keys, !cfg_.read_only))
    return err;
  auto at = now();
  for (size_t k = 0; k < keys.size(); ++k) {
    auto dest = out.subspan(k * cfg_.dim, cfg_.dim);
    if (auto row = cache_->find(keys[k])) {
      std::copy(row->values.begin(), row->values.end(), dest.begin());
      if (!cfg_.read_only) {
        ++row->meta->frequency;
        touch(keys[k], true, at);
      }
    } else if (cfg_.read_only && !cfg_.default_value.empty()) {
      std::copy(cfg_.default_value.begin(), cfg_.default_value.end(), dest.begin());
    } else {
      compute::initialize_row(cfg_.init, hashes[k], dest);
    }
  }
  return settle();
}

caf::error write_behind_store::update(std::span<const std::string_view> keys,
                                      std::span<const uint64_t> hashes,
                                      std::span<const float> grads, int64_t step) {
  if (cfg_.read_only)
    return make_error(errc::read_only, "update");
  if (grads.size() != keys.size() * cfg_.dim)
    return make_error(errc::dimension_mismatch,
                      std::to_string(keys.size()) + " keys of dim " + std::to_string(cfg_.dim) +
                        " need " + std::to_string(keys.size() * cfg_.dim) + " gradient values");
  if (!compute::all_finite(grads))
    return make_error(errc::non_finite, "gradients");
  if (auto err = load(keys, !admission_))
    return err;
  last_step_ = std::max(last_step_, step);
  auto at = now();
  std::vector<std::string_view> present;
  std::vector<uint64_t> present_hashes;
  std::vector<float> present_grads;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!cached(keys[k])) {
      ++dropped_updates_;
      continue;
    }
    present.push_back(keys[k]);
    present_hashes.push_back(hashes[k]);
    auto row = grads.subspan(k * cfg_.dim, cfg_.dim);
    present_grads.insert(present_grads.end(), row.begin(), row.end());
    touch(keys[k], true, at);
  }
  if (!present.empty())
    if (auto err = cache_->update(present, present_hashes, present_grads, step))
      return err;
  return settle();
}

store_stats write_behind_store::stats() const {
  auto s = cache_->stats();
  s.rows = rows();
  s.dropped_updates = dropped_updates_;
  return s;
}

} // namespace darcy::stores
