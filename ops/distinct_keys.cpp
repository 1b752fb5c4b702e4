#include "ops/distinct_keys.hpp"

#include <utility>

#include "compute/hash.hpp"

namespace darcy::ops {

void distinct_keys::clear(size_t expected) {
  batch_ = key_batch{};
  size_t capacity = 16;
  while (capacity < expected * 2)
    capacity *= 2;
  slots_.assign(capacity, none);
}

void distinct_keys::rehash(size_t capacity) {
  slots_.assign(capacity, none);
  for (uint32_t p = 0; p < batch_.size(); ++p) {
    auto i = batch_.hash(p) & (capacity - 1);
    while (slots_[i] != none)
      i = (i + 1) & (capacity - 1);
    slots_[i] = p;
  }
}

uint32_t distinct_keys::add(std::string_view key) {
  if (slots_.empty())
    clear();
  auto h = compute::hash_key(key);
  auto mask = slots_.size() - 1;
  auto i = h & mask;
  for (; slots_[i] != none; i = (i + 1) & mask)
    if (batch_.hash(slots_[i]) == h && batch_[slots_[i]] == key)
      return slots_[i];
  auto p = static_cast<uint32_t>(batch_.size());
  batch_.push_back(key, h);
  slots_[i] = p;
  if (batch_.size() * 2 > slots_.size())
    rehash(slots_.size() * 2);
  return p;
}

key_batch distinct_keys::take() {
  auto out = std::move(batch_);
  clear();
  return out;
}

} // namespace darcy::ops
