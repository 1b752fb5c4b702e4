#include "stores/memory_store.hpp"

#include <cstring>

#include "compute/initializer.hpp"
#include "compute/optimizer.hpp"
#include "messages/errc.hpp"

namespace darcy::stores {

namespace {

uint32_t tag_of(uint64_t hash) {
  return static_cast<uint32_t>(hash >> 32);
}

} // namespace

caf::expected<std::unique_ptr<memory_store>> memory_store::make(memory_store_options opts) {
  if (opts.dim == 0)
    return make_error(errc::invalid_config, "embedding dim must be > 0");
  if (auto err = compute::validate(opts.init))
    return err;
  if (auto err = compute::validate(opts.optimizer))
    return err;
  return std::unique_ptr<memory_store>{new memory_store(std::move(opts))};
}

memory_store::memory_store(memory_store_options opts)
  : opts_(std::move(opts)), slots_(compute::slot_count(opts_.optimizer)), index_(16) {
}

row_ref memory_store::ref(uint32_t row) {
  auto values = values_of(row);
  return {key_of(row), {values, opts_.dim}, {values + opts_.dim, opts_.dim * slots_},
          &meta_of(row)};
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
    if (s.tag == tag && key_of(s.row) == key) {
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
  if (row / chunk_rows >= values_.size()) {
    values_.emplace_back(new float[chunk_rows * stride()]);
    meta_.emplace_back(new row_meta[chunk_rows]);
  }
  return row;
}

void memory_store::grow_index() {
  std::vector<slot> old(index_.size() * 2);
  old.swap(index_);
  auto mask = index_.size() - 1;
  for (auto& s : old) {
    if (s.row == empty)
      continue;
    auto i = opts_.hash(key_of(s.row)) & mask;
    while (index_[i].row != empty)
      i = (i + 1) & mask;
    index_[i] = s;
  }
}

std::optional<row_ref> memory_store::find(std::string_view key) {
  bool found = false;
  auto i = probe(key, opts_.hash(key), found);
  if (!found)
    return std::nullopt;
  return ref(index_[i].row);
}

row_ref memory_store::find_or_insert(std::string_view key) {
  auto hash = opts_.hash(key);
  bool found = false;
  auto i = probe(key, hash, found);
  if (found)
    return ref(index_[i].row);
  if ((size_ + 1) * 4 > index_.size() * 3) {
    grow_index();
    i = probe(key, hash, found);
  }
  auto row = allocate_row();
  auto& meta = meta_of(row);
  meta = row_meta{};
  meta.key_offset = static_cast<uint32_t>(keys_.size());
  meta.key_size = static_cast<uint32_t>(key.size());
  keys_.append(key);
  index_[i] = {tag_of(hash), row};
  ++size_;
  auto r = ref(row);
  compute::initialize_row(opts_.init, hash, r.values);
  compute::init_slots(opts_.optimizer, r.slots);
  return r;
}

bool memory_store::erase(std::string_view key) {
  bool found = false;
  auto i = probe(key, opts_.hash(key), found);
  if (!found)
    return false;
  auto row = index_[i].row;
  key_garbage_ += meta_of(row).key_size;
  free_rows_.push_back(row);
  --size_;
  // Backward-shift deletion keeps every remaining key reachable from its home slot.
  auto mask = index_.size() - 1;
  for (auto j = (i + 1) & mask; index_[j].row != empty; j = (j + 1) & mask) {
    auto home = opts_.hash(key_of(index_[j].row)) & mask;
    if (((j - home) & mask) >= ((j - i) & mask)) {
      index_[i] = index_[j];
      i = j;
    }
  }
  index_[i] = slot{};
  return true;
}

caf::error memory_store::lookup(std::span<const std::string_view> keys, std::span<float> out) {
  auto dim = opts_.dim;
  if (out.size() != keys.size() * dim)
    return make_error(errc::dimension_mismatch, std::to_string(keys.size()) + " keys of dim " +
                                                  std::to_string(dim) + " need " +
                                                  std::to_string(keys.size() * dim) +
                                                  " floats, got " + std::to_string(out.size()));
  for (size_t k = 0; k < keys.size(); ++k) {
    auto dest = out.subspan(k * dim, dim);
    if (opts_.read_only) {
      if (auto r = find(keys[k]))
        std::memcpy(dest.data(), r->values.data(), dim * sizeof(float));
      else
        compute::initialize_row(opts_.init, opts_.hash(keys[k]), dest);
      continue;
    }
    auto r = find_or_insert(keys[k]);
    ++r.meta->frequency;
    std::memcpy(dest.data(), r.values.data(), dim * sizeof(float));
  }
  return {};
}

caf::error memory_store::update(std::span<const std::string_view> keys,
                                std::span<const float> grads, int64_t step) {
  auto dim = opts_.dim;
  if (opts_.read_only)
    return make_error(errc::read_only, "update");
  if (grads.size() != keys.size() * dim)
    return make_error(errc::dimension_mismatch, std::to_string(keys.size()) + " keys of dim " +
                                                  std::to_string(dim) + " need " +
                                                  std::to_string(keys.size() * dim) +
                                                  " gradient values, got " +
                                                  std::to_string(grads.size()));
  for (size_t k = 0; k < keys.size(); ++k)
    if (!compute::all_finite(grads.subspan(k * dim, dim)))
      return make_error(errc::non_finite, "gradient of key '" + std::string{keys[k]} + "'");
  for (size_t k = 0; k < keys.size(); ++k) {
    auto r = find_or_insert(keys[k]);
    compute::apply_gradient(opts_.optimizer, r.values, r.slots, grads.subspan(k * dim, dim),
                            r.meta->updates);
    r.meta->last_update = step;
  }
  return {};
}

store_stats memory_store::stats() const {
  store_stats s;
  s.rows = size_;
  s.bytes = values_.size() * chunk_rows * (stride() * sizeof(float) + sizeof(row_meta))
            + index_.capacity() * sizeof(slot) + keys_.capacity()
            + free_rows_.capacity() * sizeof(uint32_t);
  s.raw_bytes = (keys_.size() - key_garbage_) + size_ * stride() * sizeof(float);
  return s;
}

} // namespace darcy::stores
