#include "compute/rules/rule_registry.hpp"

#include "compute/rules/builtin_rules.hpp"

namespace darcy::compute {

bool valid_rule_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] < 'a' || name[0] > 'z')
    return false;
  for (auto c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

rule_registry& rule_registry::global() {
  static rule_registry* registry = [] {
    auto* r = new rule_registry;
    add_builtin_rules(*r);
    return r;
  }();
  return *registry;
}

plain_error rule_registry::add(std::shared_ptr<const update_rule> rule) {
  if (!rule)
    return {errc::invalid_config, "no update rule to register"};
  std::string name{rule->name()};
  if (!valid_rule_name(name))
    return {errc::invalid_config,
            "rule name '" + name + "': use 1 to 64 of a-z, 0-9 and '_', starting with a letter"};
  std::lock_guard<std::mutex> guard{mutex_};
  if (rules_.count(name) > 0)
    return {errc::invalid_config, "a rule named '" + name + "' is registered already"};
  rules_.emplace(std::move(name), std::move(rule));
  return {};
}

std::shared_ptr<const update_rule> rule_registry::find(std::string_view name) const {
  std::lock_guard<std::mutex> guard{mutex_};
  auto it = rules_.find(name);
  return it == rules_.end() ? nullptr : it->second;
}

std::vector<std::string> rule_registry::names() const {
  std::lock_guard<std::mutex> guard{mutex_};
  std::vector<std::string> out;
  for (auto& [name, rule] : rules_)
    out.push_back(name);
  return out;
}

} // namespace darcy::compute
