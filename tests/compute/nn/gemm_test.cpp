#include "compute/nn/gemm.hpp"

#include <random>

#include <gtest/gtest.h>

#include "compute/nn/init.hpp"
#include "compute/nn/parallel_product.hpp"

namespace darcy::compute::nn {
namespace {

TEST(nn_gemm, float_products_match_double_ones_for_every_transpose_beta_and_block) {
  std::mt19937_64 rng{1};
  struct {
    bool trans_a, trans_b;
    float beta;
  } cases[] = {{false, false, 0}, {true, false, 1},  {false, true, 0},
               {true, true, 1},   {false, false, 1}, {true, true, 0}};
  for (auto& c : cases) {
    // Operands are column blocks of wider matrices: outer strides differ from their widths.
    matrix_t<double> a_wide = normal<double>(9, 12, 1.0, rng);
    matrix_t<double> b_wide = normal<double>(9, 12, 1.0, rng);
    auto a = a_wide.middleCols(2, c.trans_a ? 5 : 9);
    auto b = b_wide.middleCols(1, c.trans_b ? 9 : 7);
    matrix_t<double> op_a = c.trans_a ? matrix_t<double>{a.transpose()} : matrix_t<double>{a};
    matrix_t<double> op_b = c.trans_b ? matrix_t<double>{b.transpose()} : matrix_t<double>{b};
    ASSERT_EQ(op_a.cols(), op_b.rows());
    matrix_t<double> start = normal<double>(op_a.rows(), op_b.cols(), 1.0, rng);
    matrix_t<double> expected = c.beta * start + op_a * op_b;
    matrix_t<float> got = start.cast<float>();
    matrix_t<float> af = a.cast<float>(), bf = b.cast<float>();
    gemm<float>(af, c.trans_a, bf, c.trans_b, got, c.beta);
    EXPECT_TRUE(got.cast<double>().isApprox(expected, 1e-5))
      << c.trans_a << c.trans_b << " beta " << c.beta;
  }
}

TEST(nn_gemm, parallel_products_equal_one_thread_for_tall_and_wide_results) {
  std::mt19937_64 rng{2};
  struct {
    Eigen::Index rows, inner, cols;
    bool trans_a, trans_b;
  } cases[] = {{300, 64, 40, false, false},
               {40, 300, 256, true, false},
               {256, 128, 300, false, true},
               {64, 200, 300, true, true}};
  for (auto& c : cases) {
    matrix_t<float> a = c.trans_a ? normal<float>(c.inner, c.rows, 1.0f, rng)
                                  : normal<float>(c.rows, c.inner, 1.0f, rng);
    matrix_t<float> b = c.trans_b ? normal<float>(c.cols, c.inner, 1.0f, rng)
                                  : normal<float>(c.inner, c.cols, 1.0f, rng);
    matrix_t<float> one(c.rows, c.cols), three(c.rows, c.cols);
    parallel_product<float>(a, c.trans_a, b, c.trans_b, one, false, 1);
    parallel_product<float>(a, c.trans_a, b, c.trans_b, three, false, 3);
    EXPECT_TRUE(three.isApprox(one, 1e-6f)) << c.rows << "x" << c.cols;
    parallel_product<float>(a, c.trans_a, b, c.trans_b, three, true, 3);
    EXPECT_TRUE(three.isApprox(2 * one, 1e-6f)) << "accumulated";
  }
}

} // namespace
} // namespace darcy::compute::nn
