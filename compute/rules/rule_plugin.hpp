// What a shared library of update rules exports, and the macro that writes it: the rule ABI
// version it was built against and its rules. A node loads one with `darcy node --plugin LIB`,
// a session with ops::load_plugin; both refuse a library of another ABI version.
//
//   // frequency_sgd.cpp, built with -shared -fPIC against Darcy's headers
//   #include "compute/rules/rule_plugin.hpp"
//   class frequency_sgd final : public darcy::compute::update_rule { ... };
//   DARCY_RULE_PLUGIN(frequency_sgd)
#pragma once

#include <cstddef>
#include <cstdint>

#include "compute/rules/update_rule.hpp"

namespace darcy::compute {

/// Changes whenever update_rule, rule_context, row_update, row_lookup, rule_slot or rule_param
/// change shape: a plugin built against another version is refused, not called.
inline constexpr uint32_t rule_abi_version = 1;

} // namespace darcy::compute

/// The symbols a plugin exports. darcy_rule_abi() answers rule_abi_version as the plugin saw
/// it; darcy_rules() answers its rules, which live as long as the process, and their count.
#define DARCY_RULE_ABI_SYMBOL "darcy_rule_abi"
#define DARCY_RULES_SYMBOL "darcy_rules"
using darcy_rule_abi_fn = uint32_t (*)();
using darcy_rules_fn = const darcy::compute::update_rule* const* (*)(size_t*);

namespace darcy::compute::detail {

/// One instance of each of `Rules`, made on the first call and never freed.
template <class... Rules>
const update_rule* const* plugin_rules(size_t* count) {
  static const update_rule* const rules[] = {new Rules()...};
  *count = sizeof...(Rules);
  return rules;
}

} // namespace darcy::compute::detail

/// Exports the rule types listed (each default-constructible) from the library being built.
#define DARCY_RULE_PLUGIN(...)                                                                \
  extern "C" __attribute__((visibility("default"))) uint32_t darcy_rule_abi() {               \
    return darcy::compute::rule_abi_version;                                                  \
  }                                                                                           \
  extern "C" __attribute__((visibility("default"))) const darcy::compute::update_rule* const* \
  darcy_rules(size_t* count) {                                                                \
    return darcy::compute::detail::plugin_rules<__VA_ARGS__>(count);                          \
  }
