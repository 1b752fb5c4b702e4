#include "compute/mips/fast_scan.hpp"

#include <algorithm>
#include <cmath>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace darcy::compute::mips {

std::vector<uint8_t> pack_codes(std::span<const uint8_t> codes, size_t n, size_t subspaces) {
  auto block_bytes = subspaces * 16;
  std::vector<uint8_t> packed(blocks_for(n) * block_bytes, 0);
  for (size_t item = 0; item < n; ++item) {
    auto* block = packed.data() + (item / block_items) * block_bytes;
    auto slot = item % block_items;
    auto shift = slot < 16 ? 0 : 4;
    for (size_t m = 0; m < subspaces; ++m)
      block[m * 16 + slot % 16] |=
        static_cast<uint8_t>((codes[item * subspaces + m] & 15) << shift);
  }
  return packed;
}

byte_table quantize_table(std::span<const float> table, size_t subspaces) {
  byte_table t;
  t.entries.resize(subspaces * codes_per_subspace);
  std::vector<float> low(subspaces);
  float widest = 0;
  for (size_t m = 0; m < subspaces; ++m) {
    const auto* row = table.data() + m * codes_per_subspace;
    auto lo = row[0], hi = row[0];
    for (size_t j = 1; j < codes_per_subspace; ++j) {
      lo = std::min(lo, row[j]);
      hi = std::max(hi, row[j]);
    }
    low[m] = lo;
    t.offset += lo;
    widest = std::max(widest, hi - lo);
  }
  t.scale = widest > 0 ? widest / 255 : 1;
  auto inverse = 1 / t.scale;
  for (size_t m = 0; m < subspaces; ++m)
    for (size_t j = 0; j < codes_per_subspace; ++j) {
      // Not below 0: each subspace is shifted by its own minimum.
      auto v = (table[m * codes_per_subspace + j] - low[m]) * inverse + 0.5f;
      t.entries[m * codes_per_subspace + j] = static_cast<uint8_t>(std::min(v, 255.0f));
    }
  return t;
}

void scan_blocks_reference(const uint8_t* packed, size_t blocks, size_t subspaces,
                           const uint8_t* table, uint16_t* sums) {
  for (size_t b = 0; b < blocks; ++b) {
    const auto* block = packed + b * subspaces * 16;
    for (size_t i = 0; i < block_items; ++i) {
      uint32_t sum = 0;
      for (size_t m = 0; m < subspaces; ++m) {
        auto byte = block[m * 16 + i % 16];
        auto code = i < 16 ? byte & 15 : byte >> 4;
        sum += table[m * 16 + code];
      }
      sums[b * block_items + i] = static_cast<uint16_t>(sum);
    }
  }
}

#if defined(__AVX2__)

void scan_blocks(const uint8_t* packed, size_t blocks, size_t subspaces, const uint8_t* table,
                 uint16_t* sums) {
  const auto low_nibble = _mm256_set1_epi8(0x0f);
  const auto low_byte = _mm256_set1_epi16(0x00ff);
  for (size_t b = 0; b < blocks; ++b) {
    const auto* block = packed + b * subspaces * 16;
    // even: items 0, 2, .., 14 then 16, 18, .., 30; odd: items 1, 3, .., 15 then 17, .., 31.
    auto even = _mm256_setzero_si256(), odd = _mm256_setzero_si256();
    for (size_t m = 0; m < subspaces; ++m) {
      auto codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + m * 16));
      // Lane 0 indexes with the low nibbles (items 0-15), lane 1 with the high (items 16-31).
      auto index = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(codes, 4), codes), low_nibble);
      auto lut = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + m * 16)));
      auto values = _mm256_shuffle_epi8(lut, index);
      even = _mm256_add_epi16(even, _mm256_and_si256(values, low_byte));
      odd = _mm256_add_epi16(odd, _mm256_srli_epi16(values, 8));
    }
    alignas(32) uint16_t e[16], o[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(e), even);
    _mm256_store_si256(reinterpret_cast<__m256i*>(o), odd);
    auto* out = sums + b * block_items;
    for (size_t i = 0; i < 8; ++i) {
      out[2 * i] = e[i];
      out[2 * i + 1] = o[i];
      out[16 + 2 * i] = e[8 + i];
      out[17 + 2 * i] = o[8 + i];
    }
  }
}

#else

void scan_blocks(const uint8_t* packed, size_t blocks, size_t subspaces, const uint8_t* table,
                 uint16_t* sums) {
  scan_blocks_reference(packed, blocks, subspaces, table, sums);
}

#endif

} // namespace darcy::compute::mips
