// Central finite differences against an analytic gradient, for the layer tests of compute/nn
// and compute/moe (double precision, step 1e-6, relative tolerance 1e-6).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "compute/nn/tensor.hpp"

namespace darcy::test {

/// Checks dL/dv for every entry of `v`: `analytic` against (L(v + h) − L(v − h)) / 2h. `loss`
/// recomputes L from the current values; `v` is restored after each entry.
inline void expect_gradient(const std::string& what, compute::nn::matrix_t<double>& v,
                            const compute::nn::matrix_t<double>& analytic,
                            const std::function<double()>& loss) {
  constexpr double step = 1e-6;
  ASSERT_EQ(analytic.rows(), v.rows()) << what;
  ASSERT_EQ(analytic.cols(), v.cols()) << what;
  for (Eigen::Index i = 0; i < v.size(); ++i) {
    auto saved = v.data()[i];
    v.data()[i] = saved + step;
    auto up = loss();
    v.data()[i] = saved - step;
    auto down = loss();
    v.data()[i] = saved;
    auto numeric = (up - down) / (2 * step);
    EXPECT_NEAR(analytic.data()[i], numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
      << what << " entry " << i;
  }
}

} // namespace darcy::test
