// DLRM's dot interaction: the output's layout (the dense vector, then each pair's dot product in
// the documented order) and the backward against central finite differences in double.
#include "compute/nn/dot_interaction.hpp"

#include <random>

#include <gtest/gtest.h>

#include "compute/nn/init.hpp"
#include "tests/support/gradient_check.hpp"

namespace darcy::compute::nn {
namespace {

using mat = matrix_t<double>;

TEST(dot_interaction, output_is_the_dense_vector_then_every_pair_below_the_diagonal) {
  mat dense(1, 2), sparse(1, 4);
  dense << 1, 2;        // z0
  sparse << 3, 4, 5, 6; // z1, z2
  auto y = dot_interaction<double>(dense, sparse);
  ASSERT_EQ(y.cols(), dot_interaction_width(2, 2));
  mat expected(1, 5);
  // z0, then (1,0) = 3 + 8, (2,0) = 5 + 12, (2,1) = 15 + 24.
  expected << 1, 2, 11, 17, 39;
  EXPECT_EQ(y, expected);
  EXPECT_EQ(dot_interaction_width(26, 16), 16 + 351);
}

TEST(dot_interaction, backward_matches_finite_differences_for_both_inputs) {
  std::mt19937_64 rng{9};
  mat dense = normal<double>(3, 4, 1.0, rng);
  mat sparse = normal<double>(3, 12, 1.0, rng); // three embeddings of width 4
  mat r = normal<double>(3, dot_interaction_width(3, 4), 1.0, rng);
  auto loss = [&] { return dot_interaction<double>(dense, sparse).cwiseProduct(r).sum(); };
  mat ddense, dsparse;
  dot_interaction_backward<double>(r, dense, sparse, ddense, dsparse);
  test::expect_gradient("dense", dense, ddense, loss);
  test::expect_gradient("sparse", sparse, dsparse, loss);
}

} // namespace
} // namespace darcy::compute::nn
