#include "compute/mips/fast_scan.hpp"

#include <random>

#include <gtest/gtest.h>

namespace darcy::compute::mips {
namespace {

TEST(fast_scan, equals_the_scalar_reference_and_the_unpacked_sums) {
  struct scan_case {
    size_t items, subspaces;
  };
  for (auto x : {scan_case{1, 1}, scan_case{31, 7}, scan_case{32, 32}, scan_case{100, 33},
                 scan_case{65, 256}, scan_case{1000, 32}}) {
    std::mt19937_64 rng{x.items * 1000 + x.subspaces};
    std::vector<uint8_t> codes(x.items * x.subspaces), table(x.subspaces * 16);
    for (auto& c : codes)
      c = static_cast<uint8_t>(rng() % 16);
    for (auto& t : table)
      t = static_cast<uint8_t>(rng() % 256);
    auto packed = pack_codes(codes, x.items, x.subspaces);
    auto blocks = blocks_for(x.items);
    ASSERT_EQ(packed.size(), blocks * x.subspaces * 16);
    std::vector<uint16_t> fast(blocks * block_items), slow(fast.size());
    scan_blocks(packed.data(), blocks, x.subspaces, table.data(), fast.data());
    scan_blocks_reference(packed.data(), blocks, x.subspaces, table.data(), slow.data());
    EXPECT_EQ(fast, slow) << x.items << " items, " << x.subspaces << " subspaces";
    for (size_t i = 0; i < x.items; ++i) {
      uint32_t sum = 0;
      for (size_t m = 0; m < x.subspaces; ++m)
        sum += table[m * 16 + codes[i * x.subspaces + m]];
      ASSERT_EQ(fast[i], sum) << "item " << i;
    }
    for (size_t i = x.items; i < fast.size(); ++i) { // padding items are all code 0
      uint32_t sum = 0;
      for (size_t m = 0; m < x.subspaces; ++m)
        sum += table[m * 16];
      ASSERT_EQ(fast[i], sum) << "padding item " << i;
    }
  }
}

TEST(quantize_table, rounds_each_sum_to_within_half_a_step_per_subspace) {
  constexpr size_t subspaces = 20;
  std::mt19937_64 rng{5};
  std::normal_distribution<float> gauss;
  std::vector<float> table(subspaces * 16);
  for (auto& t : table)
    t = gauss(rng) * 3 + 1;
  auto q = quantize_table(table, subspaces);
  ASSERT_EQ(q.entries.size(), table.size());
  for (int trial = 0; trial < 100; ++trial) {
    float exact = 0;
    uint32_t sum = 0;
    for (size_t m = 0; m < subspaces; ++m) {
      auto j = rng() % 16;
      exact += table[m * 16 + j];
      sum += q.entries[m * 16 + j];
    }
    EXPECT_NEAR(q.offset + q.scale * static_cast<float>(sum), exact,
                subspaces * q.scale * 0.5f + 1e-4f);
  }
}

TEST(quantize_table, keeps_a_constant_table_exact) {
  std::vector<float> table(3 * 16, 2.5f);
  auto q = quantize_table(table, 3);
  EXPECT_FLOAT_EQ(q.offset, 7.5f);
  for (auto e : q.entries)
    EXPECT_EQ(e, 0);
}

} // namespace
} // namespace darcy::compute::mips
