#include "compute/finite.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>
#include <Eigen/Dense>

namespace darcy::compute {
namespace {

TEST(finite, every_nan_and_infinity_is_found_at_its_position) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  std::vector<float> long_finite(10000, 1.5f);
  auto long_bad = long_finite;
  long_bad[9000] = -inf;
  struct {
    const char* what;
    std::vector<float> values;
    size_t first_bad; // values.size(): none
  } cases[] = {
    {"empty", {}, 0},
    {"finite, with zero, negatives and denormals", {0, -1, 3.5f, 1e-45f}, 4},
    {"a NaN", {0, NAN}, 1},
    {"an infinity first", {inf, 1}, 0},
    {"a negative infinity", {1, 2, -inf}, 2},
    {"past the first block of 4096", long_finite, 10000},
    {"one bad value in a later block", long_bad, 9000},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(all_finite(c.values), c.first_bad == c.values.size());
    EXPECT_EQ(first_non_finite(c.values), c.first_bad);
  }
}

TEST(finite, doubles_and_eigen_matrices_are_checked_by_the_same_rule) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  struct {
    const char* what;
    std::vector<double> values;
    bool finite;
  } cases[] = {
    {"empty", {}, true},
    {"finite, with zero, negatives and a denormal", {0, -1, 3.5, 4.9e-324}, true},
    {"a NaN", {0, std::nan("")}, false},
    {"an infinity in a later block", std::vector<double>(5000, 2.0), true},
    {"a negative infinity", {1, -inf}, false},
  };
  cases[3].values[4500] = inf;
  cases[3].finite = false;
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(all_finite(c.values), c.finite);
    Eigen::MatrixXd m = Eigen::Map<const Eigen::VectorXd>(
      c.values.data(), static_cast<Eigen::Index>(c.values.size()));
    EXPECT_EQ(all_finite(m), c.finite);
    Eigen::MatrixXf f = m.cast<float>();
    EXPECT_EQ(all_finite(f), c.finite);
  }
}

} // namespace
} // namespace darcy::compute
