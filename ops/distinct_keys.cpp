#include "ops/distinct_keys.hpp"

#include <algorithm>
#include <charconv>
#include <utility>

#include "compute/hash.hpp"

namespace darcy::ops {

void distinct_keys::clear(size_t expected) {
  batch_ = key_batch{};
  size_t capacity = 16;
  while (capacity < expected * 2)
    capacity *= 2;
  slots_.assign(capacity, none);
  ids_.clear();
  id_slots_.clear();
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

uint32_t distinct_keys::add_id(uint64_t id) {
  if (id_slots_.empty())
    id_slots_.assign(std::max<size_t>(slots_.size(), 16), none);
  auto mask = id_slots_.size() - 1;
  auto i = compute::mix64(id, 0) & mask;
  for (; id_slots_[i] != none; i = (i + 1) & mask)
    if (ids_[id_slots_[i]] == id)
      return id_slots_[i];
  char text[24];
  auto end = std::to_chars(text, text + sizeof text, id).ptr;
  std::string_view key{text, static_cast<size_t>(end - text)};
  auto p = static_cast<uint32_t>(batch_.size());
  batch_.push_back(key, compute::hash_key(key));
  ids_.push_back(id);
  id_slots_[i] = p;
  if (ids_.size() * 2 > id_slots_.size()) {
    id_slots_.assign(id_slots_.size() * 2, none);
    auto grown = id_slots_.size() - 1;
    for (uint32_t q = 0; q < ids_.size(); ++q) {
      auto j = compute::mix64(ids_[q], 0) & grown;
      while (id_slots_[j] != none)
        j = (j + 1) & grown;
      id_slots_[j] = q;
    }
  }
  return p;
}

key_batch distinct_keys::take() {
  auto out = std::move(batch_);
  clear();
  return out;
}

} // namespace darcy::ops
