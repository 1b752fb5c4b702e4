#include "compute/hash.hpp"

#include <cstring>

namespace darcy::compute {

uint64_t hash_key(std::string_view key) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ULL;
  constexpr int r = 47;
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ (key.size() * m);
  const char* data = key.data();
  size_t blocks = key.size() / 8;
  for (size_t i = 0; i < blocks; ++i) {
    uint64_t k;
    std::memcpy(&k, data + i * 8, 8);
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  const auto* tail = reinterpret_cast<const unsigned char*>(data + blocks * 8);
  switch (key.size() & 7) {
    case 7:
      h ^= uint64_t{tail[6]} << 48;
      [[fallthrough]];
    case 6:
      h ^= uint64_t{tail[5]} << 40;
      [[fallthrough]];
    case 5:
      h ^= uint64_t{tail[4]} << 32;
      [[fallthrough]];
    case 4:
      h ^= uint64_t{tail[3]} << 24;
      [[fallthrough]];
    case 3:
      h ^= uint64_t{tail[2]} << 16;
      [[fallthrough]];
    case 2:
      h ^= uint64_t{tail[1]} << 8;
      [[fallthrough]];
    case 1:
      h ^= uint64_t{tail[0]};
      h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

uint64_t mix64(uint64_t a, uint64_t b) {
  uint64_t z = a ^ ((b << 32) | (b >> 32));
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

} // namespace darcy::compute
