// messages/serving/serving_values: the latency histogram's buckets and quantile bounds.
#include "messages/serving/serving_values.hpp"

#include <vector>

#include <gtest/gtest.h>

namespace darcy {
namespace {

TEST(latency_histogram, a_quantile_bound_is_the_bound_of_the_bucket_that_holds_it) {
  struct row {
    std::vector<double> ms;
    double q;
    double bound;
  };
  std::vector<double> mostly_fast(99, 0.8);
  mostly_fast.push_back(30);
  for (auto& r : std::vector<row>{
         {{}, 0.99, 0},
         {{0.1}, 0.99, 0.25},
         {{1.0}, 0.5, 1},        // a bound is inclusive
         {mostly_fast, 0.99, 1}, // 99 of 100 at or under 1 ms
         {mostly_fast, 1.0, 50}, // the slowest lies in (25, 50]
         {{3, 4, 6, 7}, 0.5, 5},
         {{9000}, 0.99, 5000}, // past the last bound (2500): twice it
       }) {
    latency_histogram h;
    for (auto ms : r.ms)
      h.add(ms);
    EXPECT_EQ(h.quantile_bound(r.q), r.bound) << r.ms.size() << " values, q " << r.q;
  }
}

} // namespace
} // namespace darcy
