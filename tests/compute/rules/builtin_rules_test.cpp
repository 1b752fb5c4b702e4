#include "compute/rules/builtin_rules.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "compute/optimizer.hpp"
#include "compute/rules/bound_rule.hpp"
#include "compute/rules/rule_registry.hpp"

namespace darcy::compute {
namespace {

std::vector<optimizer_config> every_kind() {
  std::vector<optimizer_config> out;
  for (auto kind : {optimizer_kind::sgd, optimizer_kind::adagrad, optimizer_kind::momentum,
                    optimizer_kind::adam, optimizer_kind::ftrl}) {
    optimizer_config cfg;
    cfg.kind = kind;
    cfg.learning_rate = 0.05f;
    cfg.l1 = kind == optimizer_kind::ftrl ? 0.01f : 0.0f;
    out.push_back(cfg);
  }
  out.push_back(out[2]);
  out.back().nesterov = true;
  return out;
}

TEST(builtin_rules, EachKindsRuleIsBitForBitApplyGradientOverManySteps) {
  constexpr size_t dim = 7, rows = 5, steps = 40;
  for (auto& cfg : every_kind()) {
    auto bound = bind_rule(cfg, dim, rule_registry::global());
    ASSERT_TRUE(bound) << render(bound.error());
    SCOPED_TRACE(std::string{bound->rule().name()} + (cfg.nesterov ? " (nesterov)" : ""));
    ASSERT_EQ(bound->slot_floats(), slot_count(cfg) * dim);
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    std::vector<float> w_rule(rows * dim), w_ref, s_rule(rows * bound->slot_floats()), s_ref;
    for (auto& x : w_rule)
      x = normal(rng);
    w_ref = w_rule;
    s_ref.resize(s_rule.size());
    for (size_t r = 0; r < rows; ++r) {
      bound->init_slots({s_rule.data() + r * bound->slot_floats(), bound->slot_floats()});
      init_slots(cfg, {s_ref.data() + r * bound->slot_floats(), bound->slot_floats()});
    }
    EXPECT_EQ(s_rule, s_ref) << "starting slots";
    std::vector<uint64_t> updates(rows), ref_updates(rows);
    std::vector<float> grads(rows * dim);
    for (size_t t = 0; t < steps; ++t) {
      for (auto& g : grads)
        g = normal(rng);
      std::vector<row_update> batch;
      for (size_t r = 0; r < rows; ++r) {
        ++updates[r];
        batch.push_back({w_rule.data() + r * dim, s_rule.data() + r * bound->slot_floats(),
                         grads.data() + r * dim, updates[r], 0, 0});
        apply_gradient(cfg, {w_ref.data() + r * dim, dim},
                       {s_ref.data() + r * bound->slot_floats(), bound->slot_floats()},
                       {grads.data() + r * dim, dim}, ref_updates[r]);
      }
      bound->update(static_cast<int64_t>(t), batch);
    }
    EXPECT_EQ(updates, ref_updates);
    EXPECT_EQ(std::memcmp(w_rule.data(), w_ref.data(), w_rule.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(s_rule.data(), s_ref.data(), s_rule.size() * sizeof(float)), 0);
  }
}

TEST(builtin_rules, RowwiseAdagradKeepsOneAccumulatorARowGrownByTheMeanSquare) {
  struct rowwise_case {
    const char* name;
    std::vector<rule_value> params;
    float initial;
    float epsilon;
  };
  // g = (1, -1, 2, 0): the accumulator grows by (1 + 1 + 4 + 0) / 4 = 1.5, and each value moves
  // by 0.1 * g / (sqrt(accumulator) + epsilon).
  const rowwise_case cases[] = {
    {"TorchRec's defaults: from 0, epsilon 1e-8", {{"learning_rate", 0.1f}}, 0, 1e-8f},
    {"from 0.1, no epsilon",
     {{"learning_rate", 0.1f}, {"initial_accumulator", 0.1f}, {"epsilon", 0}},
     0.1f,
     0},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto rule = rule_registry::global().find("rowwise_adagrad");
    ASSERT_TRUE(rule);
    auto bound = bound_rule::bind(rule, c.params, 4);
    ASSERT_TRUE(bound) << render(bound.error());
    EXPECT_EQ(bound->slot_floats(), 1u);
    float w[] = {1, 1, 1, 1}, acc[1];
    bound->init_slots(acc);
    EXPECT_EQ(acc[0], c.initial);
    const float g[] = {1, -1, 2, 0};
    row_update row{w, acc, g, 1, 0, 0};
    bound->update(0, {&row, 1});
    EXPECT_FLOAT_EQ(acc[0], c.initial + 1.5f);
    const float rate = 0.1f / (std::sqrt(c.initial + 1.5f) + c.epsilon);
    EXPECT_FLOAT_EQ(w[0], 1 - rate);
    EXPECT_FLOAT_EQ(w[1], 1 + rate);
    EXPECT_FLOAT_EQ(w[2], 1 - 2 * rate);
    EXPECT_FLOAT_EQ(w[3], 1);
  }
}

TEST(builtin_rules, RowwiseAdagradLeavesAFreshRowWithAZeroGradientAsItIs) {
  auto bound = bound_rule::bind(rule_registry::global().find("rowwise_adagrad"), {}, 4);
  ASSERT_TRUE(bound) << render(bound.error());
  float w[] = {0.5f, -0.5f, 0.25f, 0}, acc[1];
  bound->init_slots(acc);
  const float g[] = {0, 0, 0, 0};
  row_update row{w, acc, g, 1, 0, 0};
  bound->update(0, {&row, 1});
  // The rate is learning_rate / epsilon, 1e6, but it multiplies a zero gradient.
  EXPECT_EQ(acc[0], 0);
  EXPECT_EQ(w[0], 0.5f);
  EXPECT_EQ(w[1], -0.5f);
  EXPECT_EQ(w[2], 0.25f);
  EXPECT_EQ(w[3], 0);
}

TEST(builtin_rules, ClippedAdagradIsAdagradOnTheGradientScaledToTheClipNorm) {
  struct clip_case {
    const char* name;
    std::vector<float> grad;
    float scale;
  };
  // clip_norm 1: (3, 4) has norm 5 and is scaled by 1/5; (0.3, 0.4) is left as it is.
  const clip_case cases[] = {{"above the norm", {3, 4}, 0.2f}, {"below it", {0.3f, 0.4f}, 1}};
  auto clipped = rule_registry::global().find("clipped_adagrad");
  ASSERT_TRUE(clipped);
  optimizer_config adagrad;
  adagrad.kind = optimizer_kind::adagrad;
  adagrad.learning_rate = 0.1f;
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto bound = bound_rule::bind(clipped, std::vector<rule_value>{{"learning_rate", 0.1f}}, 2);
    ASSERT_TRUE(bound) << render(bound.error());
    float w[] = {1, 1}, acc[2];
    bound->init_slots(acc);
    row_update row{w, acc, c.grad.data(), 1, 0, 0};
    bound->update(0, {&row, 1});
    float w_ref[] = {1, 1}, acc_ref[2];
    init_slots(adagrad, acc_ref);
    float g_ref[] = {c.scale * c.grad[0], c.scale * c.grad[1]};
    uint64_t step = 0;
    apply_gradient(adagrad, w_ref, acc_ref, g_ref, step);
    EXPECT_FLOAT_EQ(w[0], w_ref[0]);
    EXPECT_FLOAT_EQ(w[1], w_ref[1]);
    EXPECT_FLOAT_EQ(acc[1], acc_ref[1]);
  }
}

TEST(builtin_rules, RowwiseAdagradKeepsASixteenthOfAdagradsStateAtDim16) {
  auto& registry = rule_registry::global();
  EXPECT_EQ(slot_floats(*registry.find("adagrad"), 16), 16u);
  EXPECT_EQ(slot_floats(*registry.find("rowwise_adagrad"), 16), 1u);
}

} // namespace
} // namespace darcy::compute
