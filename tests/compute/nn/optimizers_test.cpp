// The dense optimizer: each parameter steps by the in-shard rule of its kind (one row of the
// parameter's size, one step count for all), its slots export and import, and the guards
// (clipping, the finite check) act on every gradient.
#include "compute/nn/optimizers.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace darcy::compute::nn {
namespace {

parameter<float> values(std::vector<float> v, std::vector<float> g) {
  parameter<float> p{"p", matrix(2, 2)};
  std::copy(v.begin(), v.end(), p.value.data());
  std::copy(g.begin(), g.end(), p.grad.data());
  return p;
}

TEST(nn_optimizers, adam_steps_follow_the_bias_corrected_rule) {
  optimizer opt{{.kind = optimizer_kind::adam, .learning_rate = 0.1f}};
  parameter<float> p{"p", matrix::Constant(1, 1, 1.0f)};
  double m = 0, v = 0, theta = 1.0;
  for (int t = 1; t <= 3; ++t) {
    double g = 0.5 * t;
    p.grad(0, 0) = static_cast<float>(g);
    opt.step({&p});
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    double lr = 0.1 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
    theta -= lr * m / (std::sqrt(v) + 1e-8);
    EXPECT_NEAR(p.value(0, 0), theta, 1e-6) << "step " << t;
    EXPECT_EQ(p.grad(0, 0), 0.0f) << "the step clears the gradient";
  }
}

TEST(nn_optimizers, every_kind_steps_each_element_by_the_in_shard_rule) {
  for (auto kind : {optimizer_kind::sgd, optimizer_kind::adagrad, optimizer_kind::momentum,
                    optimizer_kind::adam, optimizer_kind::ftrl}) {
    optimizer_config cfg{.kind = kind, .learning_rate = 0.1f, .l1 = 0.01f, .l2 = 0.1f};
    optimizer opt{cfg};
    auto a = values({1, -2, 3, 0.5f}, {0.1f, 0.2f, -0.3f, 0});
    auto b = values({0, 1, 2, 3}, {1, 1, 1, 1});
    // The same elements as single rows of the in-shard optimizer, steps counted per row.
    std::vector<float> want(a.value.data(), a.value.data() + 4);
    std::vector<float> slots(slot_count(cfg) * 4);
    init_slots(cfg, slots);
    for (int round = 0; round < 3; ++round) {
      std::vector<float> grad(a.grad.data(), a.grad.data() + 4);
      uint64_t step = round;
      apply_gradient(cfg, want, slots, grad, step);
      opt.step({&a, &b});
      for (size_t i = 0; i < 4; ++i)
        EXPECT_FLOAT_EQ(a.value.data()[i], want[i]) << to_string(kind) << " round " << round;
      a.grad = matrix::Constant(2, 2, 0.25f * float(round + 1));
      b.grad = matrix::Constant(2, 2, 1.0f);
    }
  }
}

TEST(nn_optimizers, exported_slots_continue_in_a_fresh_optimizer) {
  for (auto kind : {optimizer_kind::adagrad, optimizer_kind::adam, optimizer_kind::ftrl}) {
    optimizer_config cfg{.kind = kind, .learning_rate = 0.05f};
    optimizer first{cfg};
    auto a = values({1, 2, 3, 4}, {1, -1, 0.5f, 2});
    auto never_stepped = values({5, 6, 7, 8}, {0, 0, 0, 0});
    first.step({&a});
    auto slots = first.export_slots({&a, &never_stepped});
    ASSERT_EQ(slots.slots.size(), first.slot_count()) << to_string(kind);
    EXPECT_EQ(slots.steps, 1u);
    // A parameter never stepped exports its starting slots.
    std::vector<float> start(first.slot_count() * 4);
    init_slots(cfg, start);
    for (size_t k = 0; k < first.slot_count(); ++k)
      for (size_t i = 0; i < 4; ++i)
        EXPECT_EQ(slots.slots[k][1].data()[i], start[k * 4 + i]) << to_string(kind);
    optimizer second{cfg};
    auto copy = a;
    second.import_slots({&copy}, {slots.steps, {slots.slots.begin(), slots.slots.end()}});
    for (auto* p : {&a, &copy})
      p->grad = matrix::Constant(2, 2, 0.3f);
    first.step({&a});
    second.step({&copy});
    EXPECT_EQ(copy.value, a.value) << to_string(kind);
  }
}

TEST(nn_optimizers, clipping_scales_all_gradients_by_one_factor_only_above_the_norm) {
  struct {
    double max_norm;
    double scale;
  } cases[] = {{10.0, 1.0}, {5.0, 1.0}, {2.5, 0.5}};
  for (auto& c : cases) {
    parameter<double> a{"a", matrix_t<double>::Zero(1, 1)}, b{"b", matrix_t<double>::Zero(1, 1)};
    a.grad(0, 0) = 3.0;
    b.grad(0, 0) = 4.0;
    EXPECT_DOUBLE_EQ(clip_by_global_norm<double>({&a, &b}, c.max_norm), 5.0);
    EXPECT_DOUBLE_EQ(a.grad(0, 0), 3.0 * c.scale) << c.max_norm;
    EXPECT_DOUBLE_EQ(b.grad(0, 0), 4.0 * c.scale) << c.max_norm;
  }
}

TEST(nn_optimizers, a_nan_gradient_is_found) {
  auto a = values({0, 0, 0, 0}, {1, 1, 1, 1});
  auto b = values({0, 0, 0, 0}, {1, std::numeric_limits<float>::quiet_NaN(), 1, 1});
  EXPECT_TRUE(grads_finite<float>({&a}));
  EXPECT_FALSE(grads_finite<float>({&a, &b}));
}

} // namespace
} // namespace darcy::compute::nn
