#include "actors/embedding/top_k_scan.hpp"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "stores/embedding/memory_store.hpp"
#include "tests/support/exact_rows_store.hpp"

namespace darcy::actors {
namespace {

TEST(top_k_scan, CosineIgnoresLengthAndScoresZeroRowsZero) {
  auto store = test::exact_rows_store({{"zero", {0, 0}},
                                       {"a", {1, 0}},
                                       {"a10", {10, 0}},
                                       {"b", {0, 1}},
                                       {"c", {1, 1}},
                                       {"minus", {-3, 0}}});
  struct case_t {
    top_k_score score;
    std::vector<float> query;
    std::vector<std::pair<std::string, float>> expected;
  };
  std::vector<case_t> cases{
    {top_k_score::cosine, {2, 0}, {{"a", 1.0f}, {"a10", 1.0f}, {"c", 0.70710677f}}},
    {top_k_score::inner_product, {2, 0}, {{"a10", 20.0f}, {"a", 2.0f}, {"c", 2.0f}}},
    {top_k_score::cosine, {0, 0}, {{"*", 0.0f}, {"*", 0.0f}, {"*", 0.0f}}},
    {top_k_score::inner_product_bias, {1}, {{"a10", 10.0f}, {"c", 2.0f}, {"a", 1.0f}}},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(static_cast<int>(c.score));
    auto got = scan_top_k(*store, c.query, 3, c.score);
    ASSERT_TRUE(got) << render(got.error());
    ASSERT_EQ(got->offsets, (std::vector<uint32_t>{0, 3}));
    std::multiset<std::string> want_keys, got_keys;
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_NEAR(got->scores[i], c.expected[i].second, 1e-6) << "rank " << i;
      if (c.expected[i].first != "*") {
        want_keys.insert(c.expected[i].first);
        got_keys.insert(got->keys[i]);
      }
    }
    // Ties may come in either order; the set of keys is what must agree.
    EXPECT_EQ(got_keys, want_keys);
  }
}

TEST(top_k_scan, RefusesEmptyRaggedAndZeroKRequests) {
  auto store = test::exact_rows_store({{"a", {1, 0}}});
  struct case_t {
    std::vector<float> query;
    uint32_t k;
    top_k_score score;
    errc expected;
  };
  for (auto& c : std::vector<case_t>{
         {{}, 1, top_k_score::cosine, errc::dimension_mismatch},
         {{1, 2, 3}, 1, top_k_score::inner_product, errc::dimension_mismatch},
         {{1, 2, 3}, 1, top_k_score::cosine, errc::dimension_mismatch},
         {{1, 2}, 0, top_k_score::cosine, errc::invalid_argument},
       }) {
    auto got = scan_top_k(*store, c.query, c.k, c.score);
    ASSERT_FALSE(got);
    EXPECT_TRUE(is(got.error(), c.expected)) << render(got.error());
  }
}

} // namespace
} // namespace darcy::actors
