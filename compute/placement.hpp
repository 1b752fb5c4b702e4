// Where a row lives among a service's shards: the one placement rule that every actor, op and
// kernel uses. WALS factor rows are interleaved: id lives on shard id % count, at local row
// id / count. Embedding rows go to the shard of their key's hash.
//
//   auto shard = compute::shard_of(id, count);    // the factor shard that owns row `id`
//   auto row = compute::local_row(id, count);     // its row inside that shard
//   auto s = compute::shard_of_key("money", 4);   // the embedding shard of a raw key
//   compute::for_each_owned(vars, ps, servers, [&](uint64_t i, uint64_t) { ... });
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compute/hash.hpp"

namespace darcy::compute {

/// The shard that owns factor row `id` among `count` (count > 0).
inline uint32_t shard_of(uint64_t id, uint32_t count) {
  return static_cast<uint32_t>(id % count);
}

/// The row of `id` inside the shard that owns it.
inline uint64_t local_row(uint64_t id, uint32_t count) {
  return id / count;
}

/// The global id of local row `row` of shard `index`.
inline uint64_t global_id(uint64_t row, uint32_t index, uint32_t count) {
  return index + row * count;
}

/// How many of ids 0 .. total - 1 shard `index` owns.
inline uint64_t rows_owned(uint64_t total, uint32_t index, uint32_t count) {
  return total > index ? (total - index + count - 1) / count : 0;
}

/// Of ids first, first + 1, ..., the offset of the first one shard `index` owns; it then owns
/// every count-th.
inline uint64_t first_owned_offset(uint64_t first, uint32_t index, uint32_t count) {
  return (index + count - first % count) % count;
}

/// Calls f(id, local) for each id of 0 .. total - 1 that shard `index` of `count` owns, in
/// order, with local its row in that shard (the same rule as shard_of and local_row).
template <class F>
void for_each_owned(uint64_t total, uint32_t index, uint32_t count, F f) {
  for (uint64_t id = index, local = 0; id < total; id += count, ++local)
    f(id, local);
}

/// The embedding shard of a key whose hash_key is `hash`, among `count` (count > 0). It reads
/// the high 32 bits, so that the low bits, which pick a key's slot in a shard's index, stay
/// uniform on every shard.
inline size_t shard_of_hash(uint64_t hash, size_t count) {
  return static_cast<size_t>(((hash >> 32) * count) >> 32);
}

/// The embedding shard that owns `key` among `count` (count > 0).
inline size_t shard_of_key(std::string_view key, size_t count) {
  return shard_of_hash(hash_key(key), count);
}

} // namespace darcy::compute
