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

} // namespace
} // namespace darcy::ops
