#include "actors/embedding/full_logits_scan.hpp"

#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "stores/embedding/memory_store.hpp"
#include "tests/support/exact_rows_store.hpp"

namespace darcy::actors {
namespace {

std::vector<float> stored_row(stores::embedding_store& store, const std::string& key) {
  std::vector<float> row;
  std::string_view keys[] = {key};
  EXPECT_FALSE(store.export_keys(
    keys, [&](const stores::row_record& r) { row.assign(r.values.begin(), r.values.end()); },
    [](std::string_view) {}));
  return row;
}

TEST(full_logits_scan, every_row_gets_its_inner_product_with_each_query) {
  auto store = test::exact_rows_store({{"a", {1, 2}}, {"b", {-1, 0.5f}}, {"c", {0, 3}}});
  std::vector<float> queries{1, 0, 0.5f, -1};
  auto part = scan_logits(*store, queries, 3);
  ASSERT_TRUE(part) << render(part.error());
  ASSERT_EQ(part->keys.size(), 3u);
  ASSERT_EQ(part->logits.size(), 6u);
  std::map<std::string, std::vector<float>> rows{{"a", {1, 2}}, {"b", {-1, 0.5f}}, {"c", {0, 3}}};
  for (size_t q = 0; q < 2; ++q)
    for (size_t c = 0; c < 3; ++c) {
      auto& w = rows.at(part->keys[c]);
      EXPECT_FLOAT_EQ(part->logits[q * 3 + c], queries[q * 2] * w[0] + queries[q * 2 + 1] * w[1])
        << part->keys[c] << " for query " << q;
    }
}

TEST(full_logits_scan, bad_requests_fail_with_their_errors) {
  auto store = test::exact_rows_store({{"a", {1, 2}}, {"b", {3, 4}}});
  struct bad_case {
    const char* what;
    std::vector<float> queries;
    uint64_t max_rows;
    errc expected;
  };
  std::vector<bad_case> cases{
    {"more rows than max_rows", {1, 1}, 1, errc::batch_too_large},
    {"no queries", {}, 10, errc::dimension_mismatch},
    {"a partial query", {1, 1, 1}, 10, errc::dimension_mismatch},
    {"a NaN query", {1, std::nanf("")}, 10, errc::non_finite},
  };
  for (auto& c : cases) {
    auto part = scan_logits(*store, c.queries, c.max_rows);
    ASSERT_FALSE(part) << c.what;
    EXPECT_TRUE(is(part.error(), c.expected)) << c.what << ": " << render(part.error());
  }
}

TEST(full_logits_scan, backward_applies_row_gradients_once_and_answers_query_gradients) {
  auto store = test::exact_rows_store({{"a", {1, 2}}, {"b", {3, 4}}});
  // Two queries, columns (b, a, gone): "gone" is no row (evicted since the forward).
  std::vector<float> queries{1, 0, 0, 2};
  std::vector<float> dlogits{1, 2, 5, 0, -1, 7};
  auto dq = apply_logit_gradients(*store, {"b", "a", "gone"}, queries, dlogits, 2, true);
  ASSERT_TRUE(dq) << render(dq.error());
  // dq = dlogits · W over the rows held, by the rows before the update.
  std::vector<float> expected_dq{1 * 3 + 2 * 1, 1 * 4 + 2 * 2, -1 * 1, -1 * 2};
  EXPECT_EQ(*dq, expected_dq);
  // SGD at rate 1: w -= sum_q dlogit(q, w) * q.
  EXPECT_EQ(stored_row(*store, "b"), (std::vector<float>{3 - 1, 4 - 0}));
  EXPECT_EQ(stored_row(*store, "a"), (std::vector<float>{1 - 2, 2 - (-1) * 2}));
  EXPECT_TRUE(stored_row(*store, "gone").empty()) << "a backward creates no row";
  // A repeat (apply false) answers d(queries) by the rows as they are, changing nothing.
  auto again = apply_logit_gradients(*store, {"b", "a"}, queries, {1, 2, 0, -1}, 2, false);
  ASSERT_TRUE(again) << render(again.error());
  EXPECT_EQ(stored_row(*store, "b"), (std::vector<float>{2, 4}));
}

TEST(full_logits_scan, bad_backwards_fail_and_change_no_row) {
  auto store = test::exact_rows_store({{"a", {1, 2}}, {"b", {3, 4}}});
  struct bad_case {
    const char* what;
    std::vector<std::string> keys;
    std::vector<float> dlogits;
    errc expected;
  };
  std::vector<bad_case> cases{
    {"too few gradients", {"a", "b"}, {1, 1, 1}, errc::dimension_mismatch},
    {"a NaN gradient", {"a", "b"}, {1, std::nanf(""), 1, 1}, errc::non_finite},
    {"a repeated key", {"a", "a"}, {1, 1, 1, 1}, errc::invalid_argument},
  };
  for (auto& c : cases) {
    auto dq = apply_logit_gradients(*store, c.keys, {1, 0, 0, 1}, c.dlogits, 1, true);
    ASSERT_FALSE(dq) << c.what;
    EXPECT_TRUE(is(dq.error(), c.expected)) << c.what << ": " << render(dq.error());
  }
  EXPECT_EQ(stored_row(*store, "a"), (std::vector<float>{1, 2}));
  EXPECT_EQ(stored_row(*store, "b"), (std::vector<float>{3, 4}));
}

TEST(full_logits_scan, merged_parts_keep_each_query_row_whole) {
  std::vector<full_logits_part> parts{{{"x"}, {1, 2}}, {{}, {}}, {{"y", "z"}, {3, 4, 5, 6}}};
  auto merged = merge_full_logits(parts, 2);
  EXPECT_EQ(merged.keys, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(merged.logits, (std::vector<float>{1, 3, 4, 2, 5, 6}));
}

} // namespace
} // namespace darcy::actors
