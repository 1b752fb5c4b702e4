#include "compute/rules/rule_registry.hpp"

#include <gtest/gtest.h>

namespace darcy::compute {
namespace {

class named_rule final : public update_rule {
public:
  explicit named_rule(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  std::vector<rule_param> params() const override { return {}; }
  void update(const rule_context&, std::span<const row_update>) const override {}

private:
  std::string name_;
};

TEST(rule_registry, TheProcessKnowsTheBuiltInsByName) {
  EXPECT_EQ(rule_registry::global().names(),
            (std::vector<std::string>{"adagrad", "adam", "clipped_adagrad", "ftrl", "momentum",
                                      "rowwise_adagrad", "sgd"}));
  EXPECT_EQ(rule_registry::global().find("lamb"), nullptr);
}

TEST(rule_registry, ARuleIsAddedOnceUnderAWellFormedName) {
  struct name_case {
    const char* name;
    bool valid;
  };
  const name_case cases[] = {
    {"decayed_sgd2", true}, {"", false},    {"2fast", false}, {"Upper", false},
    {"with-dash", false},   {"a b", false}, {"x", true}};
  rule_registry registry;
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(valid_rule_name(c.name), c.valid);
    auto err = registry.add(std::make_shared<named_rule>(c.name));
    EXPECT_EQ(static_cast<bool>(err), !c.valid) << render(err);
    EXPECT_EQ(registry.find(c.name) != nullptr, c.valid);
  }
  auto again = registry.add(std::make_shared<named_rule>("x"));
  ASSERT_TRUE(again);
  EXPECT_NE(render(again).find("registered already"), std::string::npos) << render(again);
  EXPECT_TRUE(registry.add(nullptr));
}

} // namespace
} // namespace darcy::compute
