// ops/embedding_totals: the counters of a job's tables summed, and the first table's error.
#include "ops/embedding_totals.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "tests/support/embedding_requests.hpp"

namespace darcy::ops {
namespace {

TEST(embedding_totals, sums_the_rows_and_lookups_of_every_named_table) {
  auto s = session::open({});
  ASSERT_TRUE(s) << render(s.error());
  auto a = test::adagrad_table("a", 4), b = test::adagrad_table("b", 2);
  ASSERT_TRUE(dynamic_embedding_lookup(**s, {"x", "y", "z"}, a, "a", false));
  ASSERT_TRUE(dynamic_embedding_lookup(**s, {"x", "w"}, b, "b", false));
  auto one = total_stats(**s, {"a"});
  ASSERT_TRUE(one) << render(one.error());
  EXPECT_EQ(one->rows, 3u);
  auto both = total_stats(**s, (*s)->embedding_names());
  ASSERT_TRUE(both) << render(both.error());
  EXPECT_EQ(both->rows, 5u);
  auto sa = stats(**s, "a"), sb = stats(**s, "b");
  ASSERT_TRUE(sa && sb);
  EXPECT_EQ(both->bytes, sa->bytes + sb->bytes);
  EXPECT_EQ(both->raw_bytes, sa->raw_bytes + sb->raw_bytes);
  auto none = total_stats(**s, {});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->rows, 0u);
}

TEST(embedding_totals, a_table_the_service_does_not_hold_is_an_error) {
  auto s = session::open({});
  ASSERT_TRUE(s) << render(s.error());
  ASSERT_TRUE(dynamic_embedding_lookup(**s, {"x"}, test::adagrad_table("a", 4), "a", false));
  auto t = total_stats(**s, {"a", "nowhere"});
  ASSERT_FALSE(t);
  EXPECT_TRUE(is(t.error(), errc::unknown_embedding)) << render(t.error());
}

} // namespace
} // namespace darcy::ops
