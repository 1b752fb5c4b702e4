#include "compute/optimizer.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "messages/errc.hpp"

namespace darcy::compute {
namespace {

struct step_case {
  const char* name;
  optimizer_config cfg;
  std::vector<float> grads;
  float expected;
};

optimizer_config make(optimizer_kind kind) {
  optimizer_config cfg;
  cfg.kind = kind;
  cfg.learning_rate = 0.1f;
  return cfg;
}

// Hand-computed from TensorFlow's update rules with w = 1 and lr = 0.1.
std::vector<step_case> cases() {
  auto nesterov = make(optimizer_kind::momentum);
  nesterov.nesterov = true;
  auto ftrl_l1 = make(optimizer_kind::ftrl);
  ftrl_l1.l1 = 3;
  return {
    {"sgd", make(optimizer_kind::sgd), {0.5f}, 0.95f},
    // acc = 0.1 + 0.25; w = 1 - 0.1 * 0.5 / sqrt(0.35)
    {"adagrad", make(optimizer_kind::adagrad), {0.5f}, 0.9154846f},
    // accum = 0.5, then 0.9 * 0.5 + 0.5 = 0.95; w = 1 - 0.05 - 0.095
    {"momentum_two_steps", make(optimizer_kind::momentum), {0.5f, 0.5f}, 0.855f},
    // w = 1 - 0.1 * (0.5 + 0.9 * 0.5)
    {"nesterov", nesterov, {0.5f}, 0.905f},
    // The first Adam step moves by lr (up to epsilon).
    {"adam", make(optimizer_kind::adam), {0.5f}, 0.9f},
    // linear = 0.5 - (sqrt(.35) - sqrt(.1)) / 0.1; w = -linear / (sqrt(.35) / 0.1)
    {"ftrl", make(optimizer_kind::ftrl), {0.5f}, 0.3809620f},
    // |linear| = 2.25 <= l1 = 3: the weight is clipped to zero.
    {"ftrl_l1", ftrl_l1, {0.5f}, 0.0f},
  };
}

TEST(optimizer, MatchesHandComputedTensorFlowUpdates) {
  for (auto& c : cases()) {
    ASSERT_FALSE(validate(c.cfg)) << c.name;
    std::vector<float> w{1.0f};
    std::vector<float> slots(slot_count(c.cfg));
    init_slots(c.cfg, slots);
    uint64_t step = 0;
    for (auto g : c.grads)
      apply_gradient(c.cfg, w, slots, std::vector<float>{g}, step);
    EXPECT_NEAR(w[0], c.expected, 1e-6) << c.name;
    EXPECT_EQ(step, c.grads.size()) << c.name;
  }
}

TEST(optimizer, LazyAdamBiasCorrectionUsesTheRowsOwnStep) {
  auto cfg = make(optimizer_kind::adam);
  std::vector<float> busy{1.0f}, idle{1.0f};
  std::vector<float> busy_slots(2), idle_slots(2);
  uint64_t busy_step = 0, idle_step = 0;
  for (int i = 0; i < 3; ++i)
    apply_gradient(cfg, busy, busy_slots, std::vector<float>{0.5f}, busy_step);
  apply_gradient(cfg, idle, idle_slots, std::vector<float>{0.5f}, idle_step);
  EXPECT_EQ(idle_step, 1u);
  EXPECT_NEAR(idle[0], 0.9f, 1e-6) << "a row's first update is a first Adam step";
}

TEST(optimizer, AdamRateIsTheSameForAnyConfigOrderAndAnyStep) {
  // Six configs, more than a thread keeps rates for, take turns at steps from 1 to past the
  // cached range; each update equals Adam's formula computed here.
  std::vector<optimizer_config> configs;
  for (int c = 0; c < 6; ++c) {
    auto cfg = make(optimizer_kind::adam);
    cfg.learning_rate = 0.01f * static_cast<float>(c + 1);
    cfg.beta1 = 0.9f - 0.01f * static_cast<float>(c % 3);
    configs.push_back(cfg);
  }
  for (uint64_t start : {uint64_t{0}, uint64_t{70000}}) {
    for (int round = 0; round < 40; ++round) {
      for (size_t c = 0; c < configs.size(); ++c) {
        auto& cfg = configs[(c * 5 + static_cast<size_t>(round)) % configs.size()];
        uint64_t step = start + static_cast<uint64_t>(round) * 3;
        std::vector<float> w{1.0f}, slots{0.0f, 0.0f};
        apply_gradient(cfg, w, slots, std::vector<float>{0.5f}, step);
        auto t = static_cast<double>(step);
        auto rate = static_cast<float>(cfg.learning_rate * std::sqrt(1.0 - std::pow(cfg.beta2, t)) /
                                       (1.0 - std::pow(cfg.beta1, t)));
        float m = (1 - cfg.beta1) * 0.5f, v = (1 - cfg.beta2) * 0.25f;
        ASSERT_EQ(w[0], 1.0f - rate * m / (std::sqrt(v) + cfg.epsilon)) << "step " << step;
      }
    }
  }
}

TEST(optimizer, SlotsStartFromTheConfiguredAccumulator) {
  auto adagrad = make(optimizer_kind::adagrad);
  adagrad.initial_accumulator = 0.25f;
  std::vector<float> slots(3, 9.0f);
  init_slots(adagrad, slots);
  EXPECT_EQ(slots, (std::vector<float>{0.25f, 0.25f, 0.25f}));
  auto ftrl = make(optimizer_kind::ftrl);
  std::vector<float> ftrl_slots(4, 9.0f);
  init_slots(ftrl, ftrl_slots);
  EXPECT_EQ(ftrl_slots, (std::vector<float>{0.1f, 0.1f, 0.0f, 0.0f}));
}

TEST(optimizer, ValidateRejectsNonsense) {
  struct row {
    const char* name;
    optimizer_config cfg;
  };
  auto with = [](auto change) {
    auto cfg = make(optimizer_kind::adam);
    change(cfg);
    return cfg;
  };
  row rows[] = {
    {"zero_lr", with([](auto& c) { c.learning_rate = 0; })},
    {"nan_lr", with([](auto& c) { c.learning_rate = NAN; })},
    {"beta1_one", with([](auto& c) { c.beta1 = 1; })},
    {"negative_epsilon", with([](auto& c) { c.epsilon = -1; })},
    {"negative_l1", with([](auto& c) { c.l1 = -1; })},
    {"ftrl_zero_accumulator", with([](auto& c) {
       c.kind = optimizer_kind::ftrl;
       c.initial_accumulator = 0;
     })},
  };
  for (auto& r : rows)
    EXPECT_TRUE(is(validate(r.cfg), errc::invalid_config)) << r.name;
}

TEST(optimizer, TheScheduleWarmsUpHoldsThenDecaysToZero) {
  learning_rate_schedule s{
    .warmup_steps = 4, .decay_start = 10, .decay_steps = 5, .decay_power = 2};
  struct {
    uint64_t step;
    float rate;
  } rows[] = {
    {0, 0.25f}, {1, 0.5f},    {3, 1.0f},   // warmup: (step + 1) / 4
    {4, 1.0f},  {9, 1.0f},                 // the configured rate
    {10, 1.0f}, {12, 0.36f},  {14, 0.04f}, // ((15 - step) / 5)^2
    {15, 0.0f}, {1000, 0.0f},              // after the decay
  };
  for (auto& r : rows)
    EXPECT_NEAR(scheduled_rate(1.0f, s, r.step), r.rate, 1e-6) << r.step;
  EXPECT_EQ(scheduled_rate(0.3f, learning_rate_schedule{}, 123), 0.3f) << "no schedule";
  EXPECT_FALSE(validate(s));
  EXPECT_TRUE(is(validate(learning_rate_schedule{.decay_power = 0}), errc::invalid_config));
  EXPECT_TRUE(
    is(validate(learning_rate_schedule{.warmup_steps = 5, .decay_start = 2, .decay_steps = 3}),
       errc::invalid_config));
}

} // namespace
} // namespace darcy::compute
