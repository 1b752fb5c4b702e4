#include "compute/stats.hpp"

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
