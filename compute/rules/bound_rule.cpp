#include "compute/rules/bound_rule.hpp"

#include <algorithm>
#include <cmath>

#include "compute/rules/builtin_rules.hpp"
#include "compute/rules/rule_registry.hpp"

namespace darcy::compute {

namespace {

plain_error bad(std::string_view rule, const std::string& what) {
  return {errc::invalid_config, "rule '" + std::string{rule} + "': " + what};
}

} // namespace

plain_expected<bound_rule> bound_rule::bind(std::shared_ptr<const update_rule> rule,
                                            std::span<const rule_value> values, size_t dim) {
  if (!rule)
    return plain_error{errc::invalid_config, "no update rule"};
  if (dim == 0)
    return bad(rule->name(), "the rows' dim must be positive");
  bound_rule out;
  out.specs_ = rule->params();
  out.params_.resize(out.specs_.size());
  std::vector<bool> given(out.specs_.size());
  for (size_t i = 0; i < out.specs_.size(); ++i)
    out.params_[i] = out.specs_[i].default_value;
  for (auto& v : values) {
    auto it = std::find_if(out.specs_.begin(), out.specs_.end(),
                           [&](const rule_param& p) { return p.name == v.name; });
    if (it == out.specs_.end())
      return bad(rule->name(), "takes no parameter '" + v.name + "'");
    auto i = static_cast<size_t>(it - out.specs_.begin());
    if (given[i])
      return bad(rule->name(), "parameter '" + v.name + "' is given twice");
    if (!std::isfinite(v.value))
      return bad(rule->name(), "parameter '" + v.name + "' must be a finite number");
    given[i] = true;
    out.params_[i] = v.value;
  }
  if (auto err = rule->check(out.params_))
    return err;
  for (auto& slot : rule->slots()) {
    auto value = slot.initial;
    if (!slot.initial_param.empty()) {
      auto it = std::find_if(out.specs_.begin(), out.specs_.end(),
                             [&](const rule_param& p) { return p.name == slot.initial_param; });
      if (it == out.specs_.end())
        return bad(rule->name(), "slot '" + slot.name + "' starts at parameter '" +
                                   slot.initial_param + "', which the rule does not take");
      value = out.params_[static_cast<size_t>(it - out.specs_.begin())];
    }
    out.initial_slots_.insert(out.initial_slots_.end(),
                              slot.shape == slot_shape::per_value ? dim : 1, value);
  }
  out.dim_ = dim;
  out.reacts_ = rule->reacts_on_lookup();
  out.rule_ = std::move(rule);
  return out;
}

float bound_rule::param(std::string_view name) const {
  for (size_t i = 0; i < specs_.size(); ++i)
    if (specs_[i].name == name)
      return params_[i];
  return 0;
}

void bound_rule::init_slots(std::span<float> slots) const {
  std::copy(initial_slots_.begin(), initial_slots_.end(), slots.begin());
}

plain_expected<bound_rule> bind_rule(const optimizer_config& cfg, size_t dim,
                                     const rule_registry& registry) {
  if (!cfg.rule.empty()) {
    auto rule = registry.find(cfg.rule);
    if (!rule) {
      std::string known;
      for (auto& name : registry.names())
        known += (known.empty() ? "" : ", ") + name;
      return plain_error{errc::unknown_rule,
                         "'" + cfg.rule + "' (this process knows " + known + ")"};
    }
    return bound_rule::bind(std::move(rule), cfg.params, dim);
  }
  auto rule = builtin_rule(cfg.kind);
  auto params = rule->params();
  auto given = builtin_params(cfg);
  std::vector<rule_value> values;
  for (size_t i = 0; i < params.size(); ++i)
    values.push_back({params[i].name, given[i]});
  return bound_rule::bind(std::move(rule), values, dim);
}

} // namespace darcy::compute
