#include "ops/distinct_keys.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compute/hash.hpp"

namespace darcy::ops {
namespace {

struct dedup_case {
  std::string name;
  std::vector<std::string> keys;
  std::vector<uint32_t> positions;
  std::vector<std::string> distinct;
};

TEST(distinct_keys, numbers_each_key_by_its_first_appearance_and_keeps_its_hash) {
  std::vector<dedup_case> cases{
    {"empty", {}, {}, {}},
    {"all_distinct", {"a", "b", "c"}, {0, 1, 2}, {"a", "b", "c"}},
    {"repeats", {"b", "a", "b", "b", "a"}, {0, 1, 0, 0, 1}, {"b", "a"}},
    {"empty_string_and_prefixes", {"", "ab", "a", "", "ab"}, {0, 1, 2, 0, 1}, {"", "ab", "a"}},
    {"long_keys",
     {std::string(40, 'x'), std::string(41, 'x'), std::string(40, 'x')},
     {0, 1, 0},
     {std::string(40, 'x'), std::string(41, 'x')}},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    distinct_keys d;
    d.clear(c.keys.size());
    std::vector<uint32_t> positions;
    for (auto& k : c.keys)
      positions.push_back(d.add(k));
    EXPECT_EQ(positions, c.positions);
    ASSERT_EQ(d.size(), c.distinct.size());
    auto batch = d.take();
    ASSERT_EQ(batch.size(), c.distinct.size());
    for (size_t i = 0; i < c.distinct.size(); ++i) {
      EXPECT_EQ(batch[i], c.distinct[i]);
      EXPECT_EQ(batch.hash(i), compute::hash_key(c.distinct[i]));
    }
    EXPECT_EQ(d.size(), 0u);
  }
}

TEST(distinct_keys, grows_past_its_sizing_hint_and_starts_empty_after_take) {
  distinct_keys d;
  d.clear(2);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 1000; ++i)
      ASSERT_EQ(d.add(std::to_string(i)), static_cast<uint32_t>(i));
    for (int i = 999; i >= 0; --i)
      ASSERT_EQ(d.add(std::to_string(i)), static_cast<uint32_t>(i));
    EXPECT_EQ(d.take().size(), 1000u);
  }
}

TEST(distinct_keys, ids_are_the_same_keys_as_their_decimal_strings) {
  std::vector<std::vector<uint64_t>> cases{
    {},
    {7, 7, 0, 18446744073709551615ULL, 0, 7},
    {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5},
  };
  for (auto& ids : cases) {
    distinct_keys by_id, by_text;
    by_id.clear(ids.size());
    by_text.clear(ids.size());
    for (auto id : ids)
      ASSERT_EQ(by_id.add_id(id), by_text.add(std::to_string(id))) << id;
    auto a = by_id.take();
    auto b = by_text.take();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i], b[i]);
      EXPECT_EQ(a.hash(i), b.hash(i));
    }
  }
}

TEST(distinct_keys, ids_grow_past_the_sizing_hint_and_start_empty_after_take) {
  distinct_keys d;
  d.clear(2);
  for (int round = 0; round < 2; ++round) {
    for (uint64_t i = 0; i < 1000; ++i)
      ASSERT_EQ(d.add_id(i * 1000003), static_cast<uint32_t>(i));
    for (uint64_t i = 1000; i-- > 0;)
      ASSERT_EQ(d.add_id(i * 1000003), static_cast<uint32_t>(i));
    auto batch = d.take();
    ASSERT_EQ(batch.size(), 1000u);
    EXPECT_EQ(batch[999], std::to_string(999 * 1000003ULL));
  }
}

} // namespace
} // namespace darcy::ops
