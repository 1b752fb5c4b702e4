#include "stores/embedding/key_filter.hpp"

#include <string>

#include <gtest/gtest.h>

#include "compute/hash.hpp"

namespace darcy::stores {
namespace {

TEST(key_filter, NeverMissesAnAddedKeyAndRarelyClaimsAnAbsentOne) {
  struct {
    uint64_t first_capacity;
    uint64_t keys;
  } cases[] = {{1024, 1000}, {1024, 300'000}, {1 << 16, 300'000}};
  for (auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.first_capacity) + " first, " + std::to_string(c.keys) + " keys");
    key_filter filter{c.first_capacity};
    auto hash = [](uint64_t i) { return compute::hash_key("k" + std::to_string(i)); };
    for (uint64_t i = 0; i < c.keys; ++i)
      filter.add(hash(i));
    EXPECT_EQ(filter.keys(), c.keys);
    for (uint64_t i = 0; i < c.keys; ++i)
      ASSERT_TRUE(filter.may_contain(hash(i))) << i;
    uint64_t claimed = 0;
    for (uint64_t i = c.keys; i < c.keys + 100'000; ++i)
      claimed += filter.may_contain(hash(i));
    // About 1.5% a layer at its capacity; the layers together stay under 5%.
    EXPECT_LT(claimed, 5'000u);
    // 10 bits a key in each layer, the last at least a quarter full.
    EXPECT_LE(filter.bytes(), std::max<uint64_t>(c.keys, c.first_capacity) * 8 + 4096);
  }
}

} // namespace
} // namespace darcy::stores
