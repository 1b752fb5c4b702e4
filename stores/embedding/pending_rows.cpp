#include "stores/embedding/pending_rows.hpp"

#include <algorithm>
#include <bit>

namespace darcy::stores {

pending_rows::pending_rows(size_t rows)
  : slots_(std::bit_ceil(std::max<size_t>(16, 2 * rows)), empty_slot) {
  rows_.reserve(rows);
  hashes_.reserve(rows);
}

void pending_rows::reset(size_t rows) {
  keys_.clear();
  records_.clear();
  rows_.clear();
  hashes_.clear();
  places.clear();
  rows_.reserve(rows);
  hashes_.reserve(rows);
  slots_.assign(std::bit_ceil(std::max<size_t>(16, 2 * rows)), empty_slot);
}

void pending_rows::add(std::string_view key, uint64_t hash, std::string_view record, bool indexed) {
  if (2 * (rows_.size() + 1) > slots_.size()) {
    slots_.assign(2 * slots_.size(), empty_slot);
    for (uint32_t i = 0; i < rows_.size(); ++i)
      for (auto s = hashes_[i] & (slots_.size() - 1);; s = (s + 1) & (slots_.size() - 1))
        if (slots_[s] == empty_slot) {
          slots_[s] = i;
          break;
        }
  }
  for (auto s = hash & (slots_.size() - 1);; s = (s + 1) & (slots_.size() - 1))
    if (slots_[s] == empty_slot) {
      slots_[s] = static_cast<uint32_t>(rows_.size());
      break;
    }
  rows_.push_back({keys_.size(), records_.size(), static_cast<uint32_t>(key.size()),
                   static_cast<uint32_t>(record.size()), indexed});
  hashes_.push_back(hash);
  keys_.append(key);
  records_.append(record);
}

std::optional<size_t> pending_rows::find(std::string_view key, uint64_t hash) const {
  for (auto s = hash & (slots_.size() - 1); slots_[s] != empty_slot;
       s = (s + 1) & (slots_.size() - 1))
    if (hashes_[slots_[s]] == hash && this->key(slots_[s]) == key)
      return slots_[s];
  return std::nullopt;
}

} // namespace darcy::stores
