// The inner loop of quantized search: 4-bit product-quantizer codes laid out in blocks of 32
// items, scored against a query's 8-bit lookup table with byte shuffles (16 table entries fit
// one SIMD register), summed in 16 bits. A scalar reference computes the same sums.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace darcy::compute::mips {

/// Items per block of packed codes.
inline constexpr size_t block_items = 32;
/// Entries of one subspace's table: 4-bit codes.
inline constexpr size_t codes_per_subspace = 16;

/// Blocks that hold n items.
inline size_t blocks_for(size_t n) {
  return (n + block_items - 1) / block_items;
}

/// Packs `codes` (n items x subspaces, one code below 16 per byte, item-major) into
/// blocks_for(n) blocks of subspaces x 16 bytes: in a block, byte i of subspace m holds the code
/// of item i in its low nibble and of item 16 + i in its high nibble. Items past n are code 0.
std::vector<uint8_t> pack_codes(std::span<const uint8_t> codes, size_t n, size_t subspaces);

/// A query's table of one byte per (subspace, code), and what turns a sum of its entries back
/// into a score: score ~ offset + scale * sum.
struct byte_table {
  std::vector<uint8_t> entries; // subspaces x 16
  float scale = 1;
  float offset = 0;
};

/// Rounds `table` (subspaces x 16 scores) to bytes with one scale for all subspaces, each
/// subspace shifted by its own minimum. Precondition: subspaces <= 257, so that a sum of
/// `subspaces` entries fits 16 bits.
byte_table quantize_table(std::span<const float> table, size_t subspaces);

/// For each of `blocks` packed blocks, the 32 sums of table entries of its items, in item
/// order: sums[32 b + i] for item i of block b. Uses AVX2 when compiled for it.
void scan_blocks(const uint8_t* packed, size_t blocks, size_t subspaces, const uint8_t* table,
                 uint16_t* sums);

/// The same sums, one item at a time; the reference of scan_blocks.
void scan_blocks_reference(const uint8_t* packed, size_t blocks, size_t subspaces,
                           const uint8_t* table, uint16_t* sums);

} // namespace darcy::compute::mips
