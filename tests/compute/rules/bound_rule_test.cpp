#include "compute/rules/bound_rule.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "compute/rules/rule_registry.hpp"
#include "messages/optimizer_config.hpp"

namespace darcy::compute {
namespace {

TEST(bound_rule, BadParametersAreErrorsThatNameThem) {
  struct bad_case {
    const char* rule;
    std::vector<rule_value> values;
    size_t dim;
    const char* says;
  };
  const bad_case cases[] = {
    {"adagrad", {{"learnin_rate", 0.1f}}, 4, "takes no parameter 'learnin_rate'"},
    {"adagrad", {{"learning_rate", 0.1f}, {"learning_rate", 0.2f}}, 4, "given twice"},
    {"adagrad", {{"learning_rate", -1}}, 4, "learning_rate must be a positive number"},
    {"adagrad", {{"learning_rate", std::nanf("")}}, 4, "must be a finite number"},
    {"adam", {{"beta1", 1.5f}}, 4, "beta1 and beta2 must be in [0, 1)"},
    {"momentum", {{"nesterov", 0.5f}}, 4, "nesterov must be 0 or 1"},
    {"rowwise_adagrad", {{"initial_accumulator", -1}}, 4, "must be >= 0"},
    {"rowwise_adagrad", {{"initial_accumulator", 0}, {"epsilon", 0}}, 4, "not both 0"},
    {"clipped_adagrad", {{"clip_norm", -2}}, 4, "clip_norm must be > 0"},
    {"sgd", {}, 0, "dim must be positive"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.rule + std::string{": "} + c.says);
    auto bound = bound_rule::bind(rule_registry::global().find(c.rule), c.values, c.dim);
    ASSERT_FALSE(bound);
    EXPECT_EQ(bound.error().code, errc::invalid_config);
    EXPECT_NE(render(bound.error()).find(c.says), std::string::npos) << render(bound.error());
  }
  EXPECT_FALSE(bound_rule::bind(nullptr, {}, 4));
}

TEST(bound_rule, ParametersLeftOutTakeTheirDefaultsAndSlotsStartAtTheirParameter) {
  auto bound = bound_rule::bind(rule_registry::global().find("ftrl"),
                                std::vector<rule_value>{{"initial_accumulator", 0.5f}}, 3);
  ASSERT_TRUE(bound) << render(bound.error());
  EXPECT_EQ(bound->param("learning_rate"), optimizer_config{}.learning_rate);
  EXPECT_EQ(bound->param("initial_accumulator"), 0.5f);
  EXPECT_EQ(bound->param("no such parameter"), 0.0f);
  std::vector<float> slots(bound->slot_floats());
  bound->init_slots(slots);
  // FTRL's accumulator starts at initial_accumulator, its linear term at 0.
  EXPECT_EQ(slots, (std::vector<float>{0.5f, 0.5f, 0.5f, 0, 0, 0}));
}

TEST(bound_rule, ATableConfigBindsItsNamedRuleOrTheRuleOfItsKind) {
  optimizer_config named;
  named.rule = "rowwise_adagrad";
  named.params = {{"learning_rate", 0.3f}};
  auto bound = bind_rule(named, 16, rule_registry::global());
  ASSERT_TRUE(bound) << render(bound.error());
  EXPECT_EQ(bound->rule().name(), "rowwise_adagrad");
  EXPECT_EQ(bound->param("learning_rate"), 0.3f);
  EXPECT_EQ(bound->slot_floats(), 1u);

  optimizer_config adam;
  adam.kind = optimizer_kind::adam;
  adam.beta1 = 0.5f;
  bound = bind_rule(adam, 16, rule_registry::global());
  ASSERT_TRUE(bound) << render(bound.error());
  EXPECT_EQ(bound->rule().name(), "adam");
  EXPECT_EQ(bound->param("beta1"), 0.5f);
  EXPECT_EQ(bound->slot_floats(), 32u);

  optimizer_config unknown;
  unknown.rule = "lamb";
  bound = bind_rule(unknown, 16, rule_registry::global());
  ASSERT_FALSE(bound);
  EXPECT_EQ(bound.error().code, errc::unknown_rule);
  EXPECT_NE(render(bound.error()).find("'lamb' (this process knows adagrad, adam"),
            std::string::npos)
    << render(bound.error());
}

} // namespace
} // namespace darcy::compute
