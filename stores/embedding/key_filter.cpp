#include "stores/embedding/key_filter.hpp"

#include <algorithm>

#include "compute/hash.hpp"

namespace darcy::stores {

namespace {

constexpr uint64_t bits_per_key = 10;
constexpr uint64_t block_words = 8;
constexpr int probes = 7;

/// The first word of `hash`'s block among `words`.
size_t block_of(size_t words, uint64_t hash) {
  return (hash % (words / block_words)) * block_words;
}

/// 7 positions of 9 bits each in the block, from bits of the hash the block did not use.
uint64_t positions_of(uint64_t hash) {
  return compute::mix64(hash, 0x9e3779b97f4a7c15ULL);
}

} // namespace

key_filter::key_filter(uint64_t first_capacity) {
  add_layer(std::max<uint64_t>(1024, first_capacity));
}

void key_filter::add_layer(uint64_t capacity) {
  layer l;
  l.capacity = capacity;
  l.words.assign((capacity * bits_per_key + 511) / 512 * block_words, 0);
  layers_.push_back(std::move(l));
}

void key_filter::add(uint64_t hash) {
  if (layers_.back().keys >= layers_.back().capacity)
    add_layer(layers_.back().capacity * 4);
  auto& l = layers_.back();
  auto* block = l.words.data() + block_of(l.words.size(), hash);
  auto bits = positions_of(hash);
  for (int i = 0; i < probes; ++i, bits >>= 9)
    block[(bits & 511) >> 6] |= uint64_t{1} << (bits & 63);
  ++l.keys;
  ++keys_;
}

bool key_filter::may_contain(uint64_t hash) const {
  auto positions = positions_of(hash);
  // The newest layer first: it holds most keys.
  for (auto l = layers_.rbegin(); l != layers_.rend(); ++l) {
    auto* block = l->words.data() + block_of(l->words.size(), hash);
    auto bits = positions;
    bool all = true;
    for (int i = 0; i < probes && all; ++i, bits >>= 9)
      all = block[(bits & 511) >> 6] & (uint64_t{1} << (bits & 63));
    if (all)
      return true;
  }
  return false;
}

uint64_t key_filter::bytes() const {
  uint64_t bytes = 0;
  for (auto& l : layers_)
    bytes += l.words.capacity() * sizeof(uint64_t);
  return bytes;
}

} // namespace darcy::stores
