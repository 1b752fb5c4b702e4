#include "compute/placement.hpp"

#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "compute/wals_math.hpp"

namespace darcy::compute {
namespace {

// Every id of 0 .. total - 1 has exactly one owner, and the owner's rows enumerate it.
TEST(placement, EveryIdHasOneShardAndOneLocalRow) {
  struct row {
    uint64_t total;
    uint32_t count;
  } rows[] = {{0, 1}, {1, 3}, {10, 1}, {10, 3}, {17, 4}, {100, 7}};
  for (auto& r : rows) {
    std::set<uint64_t> seen;
    for (uint32_t s = 0; s < r.count; ++s)
      for (uint64_t local = 0; local < rows_owned(r.total, s, r.count); ++local) {
        auto id = global_id(local, s, r.count);
        ASSERT_LT(id, r.total);
        EXPECT_EQ(shard_of(id, r.count), s);
        EXPECT_EQ(local_row(id, r.count), local);
        EXPECT_TRUE(seen.insert(id).second) << id;
      }
    EXPECT_EQ(seen.size(), r.total) << r.total << " over " << r.count;
  }
}

TEST(placement, FirstOwnedOffsetPointsAtTheShardsFirstIdOfABlock) {
  struct row {
    uint64_t first;
    uint32_t index, count;
    uint64_t offset;
  } rows[] = {{0, 0, 3, 0}, {0, 2, 3, 2}, {4, 0, 3, 2}, {4, 1, 3, 0}, {5, 1, 4, 0}, {6, 1, 4, 3}};
  for (auto& r : rows) {
    EXPECT_EQ(first_owned_offset(r.first, r.index, r.count), r.offset);
    EXPECT_EQ(shard_of(r.first + r.offset, r.count), r.index);
  }
}

TEST(placement, InterleavedFactorsLocateRowsByTheSameRule) {
  std::vector<const float*> parts(5, nullptr);
  interleaved_factors factors{parts, 1};
  for (uint64_t id : {0ull, 1ull, 4ull, 5ull, 123456789ull, 4294967295ull}) {
    auto [part, local] = factors.locate(id);
    EXPECT_EQ(part, shard_of(id, 5)) << id;
    EXPECT_EQ(local, local_row(id, 5)) << id;
  }
}

TEST(placement, KeysSpreadOverEveryShardAndStayPut) {
  std::vector<int> per_shard(4, 0);
  for (int i = 0; i < 400; ++i) {
    auto key = "key-" + std::to_string(i);
    auto s = shard_of_key(key, 4);
    ASSERT_LT(s, 4u);
    EXPECT_EQ(shard_of_key(key, 4), s);
    ++per_shard[s];
  }
  for (int n : per_shard)
    EXPECT_GT(n, 50);
}

TEST(placement, ForEachOwnedVisitsAShardsIdsWithTheirLocalRows) {
  for (uint32_t count : {1u, 3u, 4u})
    for (uint64_t total : {0ull, 1ull, 10ull}) {
      std::vector<int> owners(total, 0);
      for (uint32_t index = 0; index < count; ++index) {
        uint64_t visits = 0;
        for_each_owned(total, index, count, [&](uint64_t id, uint64_t local) {
          EXPECT_EQ(shard_of(id, count), index);
          EXPECT_EQ(local_row(id, count), local);
          EXPECT_EQ(local, visits++);
          ++owners[id];
        });
        EXPECT_EQ(visits, rows_owned(total, index, count));
      }
      for (auto n : owners)
        EXPECT_EQ(n, 1) << "every id has exactly one owner";
    }
}

} // namespace
} // namespace darcy::compute
