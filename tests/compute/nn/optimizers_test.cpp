#include "compute/nn/optimizers.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace darcy::compute::nn {
namespace {

parameter<double> one_value(double value, double grad) {
  parameter<double> p{"p", matrix_t<double>::Constant(1, 1, value)};
  p.grad(0, 0) = grad;
  return p;
}

TEST(nn_optimizers, adam_steps_follow_the_bias_corrected_rule) {
  adam_config cfg{.learning_rate = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-8};
  adam<double> opt{cfg};
  auto p = one_value(1.0, 0.5);
  double m = 0, v = 0, theta = 1.0;
  for (int t = 1; t <= 3; ++t) {
    double g = 0.5 * t;
    p.grad(0, 0) = g;
    opt.step({&p});
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    double lr = 0.1 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
    theta -= lr * m / (std::sqrt(v) + 1e-8);
    EXPECT_NEAR(p.value(0, 0), theta, 1e-12) << "step " << t;
    EXPECT_EQ(p.grad(0, 0), 0.0) << "the step clears the gradient";
  }
}

TEST(nn_optimizers, adagrad_steps_divide_by_the_root_of_the_accumulated_squares) {
  adagrad<double> opt{{.learning_rate = 0.5, .initial_accumulator = 0.1}};
  auto p = one_value(2.0, 1.0);
  opt.step({&p});
  EXPECT_NEAR(p.value(0, 0), 2.0 - 0.5 * 1.0 / std::sqrt(1.1), 1e-12);
  p.grad(0, 0) = -2.0;
  opt.step({&p});
  EXPECT_NEAR(p.value(0, 0), 2.0 - 0.5 / std::sqrt(1.1) + 0.5 * 2.0 / std::sqrt(5.1), 1e-12);
}

TEST(nn_optimizers, clipping_scales_all_gradients_by_one_factor_only_above_the_norm) {
  struct {
    double max_norm;
    double scale;
  } cases[] = {{10.0, 1.0}, {5.0, 1.0}, {2.5, 0.5}};
  for (auto& c : cases) {
    auto a = one_value(0, 3.0);
    auto b = one_value(0, 4.0);
    EXPECT_DOUBLE_EQ(clip_by_global_norm<double>({&a, &b}, c.max_norm), 5.0);
    EXPECT_DOUBLE_EQ(a.grad(0, 0), 3.0 * c.scale) << c.max_norm;
    EXPECT_DOUBLE_EQ(b.grad(0, 0), 4.0 * c.scale) << c.max_norm;
  }
}

TEST(nn_optimizers, a_nan_gradient_is_found) {
  auto a = one_value(0, 1.0);
  auto b = one_value(0, std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(grads_finite<double>({&a}));
  EXPECT_FALSE(grads_finite<double>({&a, &b}));
}

TEST(nn_optimizers, bad_configs_name_their_field) {
  auto nan = std::numeric_limits<double>::quiet_NaN();
  struct {
    plain_error err;
    const char* field;
  } cases[] = {
    {validate(adam_config{.learning_rate = 0}), "learning_rate"},
    {validate(adam_config{.learning_rate = nan}), "learning_rate"},
    {validate(adam_config{.beta1 = 1.0}), "beta1"},
    {validate(adam_config{.beta2 = -0.1}), "beta2"},
    {validate(adam_config{.epsilon = 0}), "epsilon"},
    {validate(adagrad_config{.learning_rate = -1}), "learning_rate"},
    {validate(adagrad_config{.initial_accumulator = -1}), "initial_accumulator"},
  };
  for (auto& c : cases) {
    EXPECT_TRUE(is(c.err, errc::invalid_config)) << c.field;
    EXPECT_NE(render(c.err).find(c.field), std::string::npos) << render(c.err);
  }
  EXPECT_FALSE(validate(adam_config{}));
  EXPECT_FALSE(validate(adagrad_config{}));
}

} // namespace
} // namespace darcy::compute::nn
