#include "stores/embedding/pointer_cache.hpp"

#include <gtest/gtest.h>

namespace darcy::stores {
namespace {

/// A hash that lands in bucket `bucket` with high bits `tag`.
uint64_t hash_of(uint64_t tag, uint64_t bucket) {
  return tag << 32 | bucket;
}

value_pointer place(uint32_t generation, uint64_t offset, uint32_t length) {
  return {.generation = generation, .offset = offset, .length = length};
}

TEST(pointer_cache, APutIsFoundUntilErasedAndAnotherHashIsNot) {
  pointer_cache cache{64 * 1024};
  EXPECT_EQ(cache.bytes(), 64u * 1024);
  struct case_t {
    const char* name;
    value_pointer at;
  } cases[] = {
    {"small", place(1, 0, 1)},
    {"the largest place an entry holds",
     place(UINT32_MAX, (uint64_t{1} << 40) - 1, (1u << 24) - 1)},
    {"typical", place(7, 123'456'789, 170)},
  };
  uint64_t h = 0x1234'5678'9abc'def0;
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    cache.put(h, c.at);
    auto found = cache.find(h);
    ASSERT_TRUE(found);
    EXPECT_EQ(*found, c.at);
    EXPECT_FALSE(cache.find(h ^ (uint64_t{1} << 40))) << "same bucket, another tag";
    EXPECT_FALSE(cache.find(h + 1)) << "another bucket";
  }
  EXPECT_EQ(cache.size(), 1u) << "a put of a held hash replaces its place";
  cache.erase(h);
  EXPECT_FALSE(cache.find(h));
  EXPECT_EQ(cache.size(), 0u);
  cache.erase(h); // nothing held: nothing happens
  EXPECT_EQ(cache.size(), 0u);
}

TEST(pointer_cache, APlacePastAnEntryIsNotHeldAndErasesTheOldOne) {
  pointer_cache cache{4096};
  uint64_t h = hash_of(9, 3);
  cache.put(h, place(1, 10, 100));
  struct case_t {
    const char* name;
    value_pointer at;
  } cases[] = {
    {"offset of 2^40", place(1, uint64_t{1} << 40, 100)},
    {"record of 2^24 bytes", place(1, 10, 1u << 24)},
    {"length 0", place(1, 10, 0)},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    cache.put(h, place(1, 10, 100));
    cache.put(h, c.at);
    EXPECT_FALSE(cache.find(h)) << "the old place is stale once the row moved";
  }
}

TEST(pointer_cache, AFullBucketDropsItsLeastRecentlyPutEntry) {
  pointer_cache cache{4096}; // 64 buckets
  for (uint64_t tag = 1; tag <= 4; ++tag)
    cache.put(hash_of(tag, 5), place(1, tag, 10));
  cache.put(hash_of(1, 5), place(1, 100, 10)); // the first put again: now the most recent
  cache.put(hash_of(5, 5), place(1, 5, 10));   // drops tag 2
  EXPECT_FALSE(cache.find(hash_of(2, 5)));
  for (uint64_t tag : {1, 3, 4, 5})
    EXPECT_TRUE(cache.find(hash_of(tag, 5))) << tag;
  EXPECT_EQ(cache.find(hash_of(1, 5))->offset, 100u);
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_TRUE(cache.find(hash_of(3, 5 + 64)))
    << "a hash of the same bucket bits and tag finds the entry: the caller checks the key";
}

TEST(pointer_cache, ABudgetBelowOneBucketHoldsNothing) {
  pointer_cache cache{63};
  EXPECT_EQ(cache.bytes(), 0u);
  cache.put(1, place(1, 1, 1));
  EXPECT_FALSE(cache.find(1));
  cache.erase(1);
  EXPECT_EQ(cache.size(), 0u);
}

} // namespace
} // namespace darcy::stores
