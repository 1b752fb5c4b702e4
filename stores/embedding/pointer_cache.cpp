#include "stores/embedding/pointer_cache.hpp"

#include <algorithm>
#include <bit>

namespace darcy::stores {

namespace {

constexpr int offset_bits = 40;
constexpr int length_bits = 24;

} // namespace

pointer_cache::pointer_cache(uint64_t bytes) {
  auto count = bytes / sizeof(bucket);
  if (count == 0)
    return;
  count = std::bit_floor(count);
  buckets_.resize(count);
  mask_ = count - 1;
}

int pointer_cache::way_of(const bucket& b, uint64_t hash) {
  for (int w = 0; w < ways; ++w)
    if (b.ways[w].offset_length != 0 && b.ways[w].tag_generation >> 32 == hash_tag(hash))
      return w;
  return -1;
}

std::optional<value_pointer> pointer_cache::find(uint64_t hash) const {
  if (buckets_.empty())
    return std::nullopt;
  auto& b = bucket_of(hash);
  auto w = way_of(b, hash);
  if (w < 0)
    return std::nullopt;
  auto& e = b.ways[w];
  return value_pointer{
    .generation = static_cast<uint32_t>(e.tag_generation),
    .offset = e.offset_length >> length_bits,
    .length = static_cast<uint32_t>(e.offset_length & ((1u << length_bits) - 1))};
}

void pointer_cache::put(uint64_t hash, const value_pointer& at) {
  if (buckets_.empty())
    return;
  if (at.offset >> offset_bits != 0 || at.length >> length_bits != 0 || at.length == 0) {
    erase(hash);
    return;
  }
  auto& b = bucket_of(hash);
  // The entry moves to the front, the ones before it one way back; a new one drops the last.
  auto w = way_of(b, hash);
  if (w < 0) {
    w = ways - 1;
    if (b.ways[w].offset_length == 0)
      ++size_;
  }
  std::move_backward(b.ways, b.ways + w, b.ways + w + 1);
  b.ways[0] = {hash_tag(hash) << 32 | at.generation, at.offset << length_bits | at.length};
}

void pointer_cache::erase(uint64_t hash) {
  if (buckets_.empty())
    return;
  auto& b = bucket_of(hash);
  auto w = way_of(b, hash);
  if (w < 0)
    return;
  std::move(b.ways + w + 1, b.ways + ways, b.ways + w);
  b.ways[ways - 1] = {};
  --size_;
}

} // namespace darcy::stores
