// The 64-bit key hash of the embedding service. It is fixed by this file alone (no std::hash), so
// a key maps to the same shard and the same initial vector in every process, build and restart.
#pragma once

#include <cstdint>
#include <string_view>

namespace darcy::compute {

/// A 64-bit hash of `key` (MurmurHash64A's mixing, seed 0x9E3779B97F4A7C15).
uint64_t hash_key(std::string_view key);

/// Mixes two 64-bit values into one (splitmix64 finalizer over a ^ rotated b).
uint64_t mix64(uint64_t a, uint64_t b);

} // namespace darcy::compute
