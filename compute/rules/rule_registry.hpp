// The update rules a process knows, by name: the built-ins from the start, a plugin's rules
// once it is loaded. A table names its rule; a shard binds it (bound_rule) when it creates
// the table, so a rule must be registered on every node that holds one of the table's shards.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "compute/rules/update_rule.hpp"

namespace darcy::compute {

class rule_registry {
public:
  /// An empty registry (tests); global() is the process's.
  rule_registry() = default;
  rule_registry(const rule_registry&) = delete;
  rule_registry& operator=(const rule_registry&) = delete;

  /// The process's registry, holding the built-in rules (builtin_rules.hpp) from its first use.
  static rule_registry& global();

  /// errc::invalid_config when `rule` is null, its name is not 1 to 64 of [a-z0-9_] starting
  /// with a letter, or a rule of that name is registered (a rule is never replaced: rows
  /// trained by one must not be updated by another of the same name).
  plain_error add(std::shared_ptr<const update_rule> rule);
  /// The rule named `name`; nullptr when none is.
  std::shared_ptr<const update_rule> find(std::string_view name) const;
  /// The registered names, sorted.
  std::vector<std::string> names() const;

private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const update_rule>, std::less<>> rules_;
};

/// Whether `name` may name a rule: 1 to 64 of [a-z0-9_], starting with a letter.
bool valid_rule_name(std::string_view name);

} // namespace darcy::compute
