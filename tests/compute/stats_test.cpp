#include "compute/stats.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace darcy::compute {
namespace {

TEST(percentile, NearestRankOnKnownSamples) {
  std::vector<double> xs;
  for (int i = 100; i >= 1; --i)
    xs.push_back(i);
  struct row {
    double q;
    double expected;
  } rows[] = {{0.0, 1}, {0.01, 1}, {0.5, 50}, {0.99, 99}, {1.0, 100}, {2.0, 100}};
  for (auto& r : rows)
    EXPECT_EQ(percentile(xs, r.q), r.expected) << r.q;
}

TEST(percentile, EmptyAndSingleSamples) {
  EXPECT_EQ(percentile({}, 0.5), 0);
  EXPECT_EQ(percentile({7}, 0.99), 7);
}

TEST(to_micros, ConvertsNanoseconds) {
  EXPECT_EQ(to_micros({1500, 2000}), (std::vector<double>{1.5, 2.0}));
}

} // namespace
} // namespace darcy::compute

namespace darcy::compute {
namespace {

TEST(spearman, RanksWithTiesAgainstKnownValues) {
  struct spearman_case {
    const char* what;
    std::vector<double> x, y;
    double expected;
  };
  std::vector<spearman_case> cases{
    {"monotone, not linear", {1, 2, 3, 4}, {1, 4, 9, 100}, 1.0},
    {"reversed", {1, 2, 3}, {3, 2, 1}, -1.0},
    // Ranks x (1, 2.5, 2.5, 4), y (1, 2, 3, 4): Pearson of the ranks = 0.9486833.
    {"tie shares its average rank", {1, 2, 2, 3}, {10, 20, 30, 40}, 0.9486832980505138},
  };
  for (auto& c : cases)
    EXPECT_NEAR(spearman(c.x, c.y), c.expected, 1e-12) << c.what;
  EXPECT_TRUE(std::isnan(spearman({1}, {2})));
  EXPECT_TRUE(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
}

} // namespace
} // namespace darcy::compute
