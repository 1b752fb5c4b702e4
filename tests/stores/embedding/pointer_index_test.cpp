#include "stores/embedding/pointer_index.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <unordered_map>

#include <gtest/gtest.h>

namespace darcy::stores {
namespace {

constexpr uint32_t record_bytes = 100;

/// The place of a record of a key of `key_bytes` bytes.
value_pointer place(uint32_t generation, uint64_t offset, size_t key_bytes = 8) {
  return {.generation = generation,
          .offset = offset,
          .length = value_log::record_length(key_bytes, record_bytes)};
}

std::vector<value_pointer> found(const pointer_index& index, uint64_t hash, size_t key_bytes = 8) {
  std::vector<value_pointer> out;
  index.find(hash, key_bytes, out);
  return out;
}

TEST(pointer_index, APlaceIsFoundUntilErasedWhetherAnEntryOrTheSideTableHoldsIt) {
  struct case_t {
    const char* name;
    value_pointer at;
    size_t key_bytes;
    bool in_side_table;
  } cases[] = {
    {"first record of the oldest generation", place(3, 0), 8, false},
    {"largest offset an entry holds", place(9, 0xffff'ffff), 8, false},
    {"newest generation an entry holds", place(9, 77), 8, false},
    {"offset of 2^32", place(3, uint64_t{1} << 32), 8, true},
    {"a generation 7 above the oldest", place(10, 5), 8, true},
    {"a generation below the oldest", place(2, 5), 8, true},
    {"a length that is not its key's", {.generation = 3, .offset = 5, .length = 7}, 8, true},
    {"a long key", place(4, 123'456, 4000), 4000, false},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    pointer_index index{record_bytes, 3};
    uint64_t h = 0x9e37'79b9'7f4a'7c15;
    index.insert(h, c.key_bytes, c.at);
    EXPECT_EQ(index.size(), 1u);
    EXPECT_EQ(index.side_size(), c.in_side_table ? 1u : 0u);
    auto places = found(index, h, c.key_bytes);
    ASSERT_EQ(places.size(), 1u);
    EXPECT_EQ(places[0], c.at);
    EXPECT_TRUE(found(index, h ^ 1).empty()) << "another hash";
    EXPECT_TRUE(found(index, h ^ (uint64_t{1} << 63)).empty()) << "another hash";
    EXPECT_FALSE(index.erase(h, place(3, 999'999))) << "a place not held";
    EXPECT_TRUE(index.erase(h, c.at));
    EXPECT_TRUE(found(index, h, c.key_bytes).empty());
    EXPECT_EQ(index.size(), 0u);
    EXPECT_FALSE(index.erase(h, c.at));
  }
}

/// A hash other than `a` that `index` cannot tell from it.
uint64_t agreeing(const pointer_index& index, uint64_t a) {
  for (uint64_t b = a + 1;; ++b)
    if (index.agree(a, b))
      return b;
}

TEST(pointer_index, HashesAgreeingInTheBitsKeptAnswerBothPlacesForTheCallerToTellApart) {
  pointer_index index{record_bytes, 0, 2};
  uint64_t a = 0xabcd'ef00'0000'0011, b = agreeing(index, a);
  pointer_index whole{record_bytes, 0};
  ASSERT_TRUE(whole.agree(a, a));
  ASSERT_FALSE(whole.agree(a, b)) << "all 29 bits kept tell them apart";
  index.insert(a, 8, place(0, 100));
  index.insert(b, 8, place(0, 200));
  auto places = found(index, a);
  std::sort(places.begin(), places.end(), [](auto& x, auto& y) { return x.offset < y.offset; });
  EXPECT_EQ(places, (std::vector{place(0, 100), place(0, 200)}));
  EXPECT_TRUE(index.replace(b, 8, place(0, 200), place(0, 300)));
  EXPECT_FALSE(index.replace(a, 8, place(0, 200), place(0, 400))) << "200 is gone";
  EXPECT_EQ(index.size(), 2u);
  EXPECT_TRUE(index.erase(a, place(0, 100)));
  EXPECT_EQ(found(index, b), std::vector{place(0, 300)});
}

TEST(pointer_index, DroppingGenerationsKeepsTheNewerPlacesAndForgetsTheOlder) {
  pointer_index index{record_bytes, 1};
  std::mt19937_64 rng{11};
  std::map<uint64_t, value_pointer> held;
  for (uint64_t i = 0; i < 5000; ++i) {
    auto h = rng();
    auto at = place(1 + i % 3, i * 116);
    index.insert(h, 8, at);
    held[h] = at;
  }
  index.drop_generations_below(3);
  for (auto& [h, at] : held) {
    auto places = found(index, h);
    if (at.generation < 3) {
      EXPECT_TRUE(places.empty());
    } else {
      ASSERT_EQ(places.size(), 1u);
      EXPECT_EQ(places[0], at);
    }
  }
  EXPECT_EQ(index.size(), 1666u) << "i % 3 == 2: generation 3";
  // Generation 9 is now within the seven an entry tells apart.
  index.insert(1, 8, place(9, 0));
  EXPECT_EQ(index.side_size(), 0u);
}

// A model check: 200,000 operations against a std::multimap, through the growth of every
// partition and the backward shifts of erasure.
TEST(pointer_index, ItHoldsWhatAMultimapHoldsThroughGrowthAndErasure) {
  // Tags of 12 bits: entries of one tag share their probe runs.
  pointer_index index{record_bytes, 0, 12};
  std::multimap<uint64_t, value_pointer> model;
  std::unordered_map<uint64_t, uint64_t> owners; // offset -> hash
  std::vector<uint64_t> hashes;
  std::mt19937_64 rng{5};
  uint64_t offset = 0;
  for (int op = 0; op < 200'000; ++op) {
    auto roll = rng() % 10;
    if (roll < 6 || hashes.empty()) {
      auto h = rng();
      auto at = place(static_cast<uint32_t>(rng() % 3), offset += 120);
      index.insert(h, 8, at);
      model.emplace(h, at);
      owners[at.offset] = h;
      hashes.push_back(h);
      continue;
    }
    auto h = hashes[rng() % hashes.size()];
    auto it = model.find(h);
    if (it == model.end())
      continue;
    if (roll < 8) {
      auto at = place(static_cast<uint32_t>(rng() % 3), offset += 120);
      ASSERT_TRUE(index.replace(h, 8, it->second, at));
      owners.erase(it->second.offset);
      owners[at.offset] = h;
      it->second = at;
    } else {
      ASSERT_TRUE(index.erase(h, it->second));
      owners.erase(it->second.offset);
      model.erase(it);
    }
  }
  ASSERT_EQ(index.size(), model.size());
  for (auto h : hashes) {
    auto [first, last] = model.equal_range(h);
    auto places = found(index, h);
    for (auto it = first; it != last; ++it)
      EXPECT_NE(std::find(places.begin(), places.end(), it->second), places.end());
    // Any other place is another held hash's that agrees with h in the bits kept.
    for (auto& p : places) {
      auto owner = owners.find(p.offset);
      ASSERT_NE(owner, owners.end());
      EXPECT_TRUE(index.agree(owner->second, h));
    }
  }
  EXPECT_LT(index.bytes(), model.size() * 16 + 64 * 1024) << "under 16 bytes a place";
}

} // namespace
} // namespace darcy::stores
