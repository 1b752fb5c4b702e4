// Batch normalisation's kernels: the training backward against central finite differences in
// double (the batch statistics depend on x, and the gradient must count that), inference with
// the batch's own statistics equal to training, and the moving-statistic rule of optimizers.
#include "compute/nn/batch_norm.hpp"

#include <random>

#include <gtest/gtest.h>

#include "compute/nn/init.hpp"
#include "compute/nn/optimizers.hpp"
#include "tests/support/gradient_check.hpp"

namespace darcy::compute::nn {
namespace {

using mat = matrix_t<double>;

TEST(batch_norm, training_backward_matches_finite_differences_for_x_gain_and_bias) {
  std::mt19937_64 rng{5};
  mat x = normal<double>(6, 3, 2.0, rng);
  mat gain = normal<double>(1, 3, 1.0, rng);
  mat bias = normal<double>(1, 3, 1.0, rng);
  mat r = normal<double>(6, 3, 1.0, rng);
  auto loss = [&] {
    batch_norm_cache<double> cache;
    mat mean, var;
    return batch_norm_train<double>(x, gain, bias, 1e-3, cache, mean, var).cwiseProduct(r).sum();
  };
  batch_norm_cache<double> cache;
  mat mean, var;
  batch_norm_train<double>(x, gain, bias, 1e-3, cache, mean, var);
  mat dgain = mat::Zero(1, 3), dbias = mat::Zero(1, 3);
  mat dx = batch_norm_backward<double>(r, gain, cache, dgain, dbias);
  test::expect_gradient("x", x, dx, loss);
  test::expect_gradient("gain", gain, dgain, loss);
  test::expect_gradient("bias", bias, dbias, loss);
}

TEST(batch_norm, training_normalises_each_column_and_inference_with_its_statistics_agrees) {
  std::mt19937_64 rng{6};
  mat x = normal<double>(8, 4, 3.0, rng);
  x.col(2).array() += 10; // a column far from 0
  mat gain = mat::Ones(1, 4), bias = mat::Zero(1, 4);
  batch_norm_cache<double> cache;
  mat mean, var;
  mat y = batch_norm_train<double>(x, gain, bias, 0.0, cache, mean, var);
  for (Eigen::Index c = 0; c < 4; ++c) {
    EXPECT_NEAR(y.col(c).mean(), 0.0, 1e-12) << c;
    EXPECT_NEAR(y.col(c).squaredNorm() / 8, 1.0, 1e-9) << c;
    EXPECT_NEAR(mean(0, c), x.col(c).mean(), 1e-12) << c;
  }
  mat again = batch_norm_infer<double>(x, gain, bias, mean, var, 0.0);
  EXPECT_TRUE(again.isApprox(y, 1e-12));
}

TEST(batch_norm, moving_statistics_move_by_their_grad_under_every_optimizer) {
  struct case_t {
    const char* name;
    bool statistic;
  } names[] = {{"bn/moving_mean", true},
               {"moving_variance", true},
               {"dnn/bn/gamma", false},
               {"moving/kernel", false},
               {"a/movingmean", false}};
  for (auto& c : names)
    EXPECT_EQ(is_moving_statistic(c.name), c.statistic) << c.name;
  for (auto kind : {optimizer_kind::sgd, optimizer_kind::adagrad, optimizer_kind::momentum,
                    optimizer_kind::adam, optimizer_kind::ftrl}) {
    optimizer_config cfg;
    cfg.kind = kind;
    cfg.learning_rate = 0.5f;
    optimizer opt{cfg};
    parameter<float> average{"bn/moving_mean", matrix::Constant(1, 2, 1.0f)};
    average.grad << 0.25f, -0.5f;
    opt.step({&average});
    EXPECT_FLOAT_EQ(average.value(0, 0), 0.75f) << to_string(kind);
    EXPECT_FLOAT_EQ(average.value(0, 1), 1.5f) << to_string(kind);
    EXPECT_EQ(average.grad.squaredNorm(), 0.0f) << to_string(kind);
  }
  // Clipping leaves the statistics' grads alone and does not count them.
  parameter<float> w{"w", matrix::Zero(1, 1)}, average{"bn/moving_mean", matrix::Zero(1, 1)};
  w.grad(0, 0) = 3;
  average.grad(0, 0) = 100;
  EXPECT_FLOAT_EQ(clip_by_global_norm<float>({&w, &average}, 1.0f), 3.0f);
  EXPECT_FLOAT_EQ(w.grad(0, 0), 1.0f);
  EXPECT_FLOAT_EQ(average.grad(0, 0), 100.0f);
}

} // namespace
} // namespace darcy::compute::nn
