#include "ops/load_plugin.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <memory>

#include "compute/rules/rule_plugin.hpp"
#include "messages/error.hpp"

namespace darcy::ops {

caf::expected<std::vector<std::string>> load_plugin(const std::string& path,
                                                    compute::rule_registry& registry) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return make_error(errc::not_found, "rule plugin " + path);
  // RTLD_LOCAL: two plugins may define classes of the same name.
  auto* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    return make_error(errc::io_error,
                      "cannot load rule plugin " + path + ": " + (why ? why : "dlopen failed"));
  }
  auto abi = reinterpret_cast<darcy_rule_abi_fn>(::dlsym(handle, DARCY_RULE_ABI_SYMBOL));
  auto list = reinterpret_cast<darcy_rules_fn>(::dlsym(handle, DARCY_RULES_SYMBOL));
  if (!abi || !list)
    return make_error(errc::unsupported, path + " is not a Darcy rule plugin (it exports no " +
                                           DARCY_RULE_ABI_SYMBOL + " and " + DARCY_RULES_SYMBOL +
                                           "; see DARCY_RULE_PLUGIN)");
  if (auto version = abi(); version != compute::rule_abi_version)
    return make_error(errc::unsupported,
                      path + " was built for rule ABI " + std::to_string(version) +
                        "; this build of Darcy loads rule ABI " +
                        std::to_string(compute::rule_abi_version) + ": build it again");
  size_t count = 0;
  auto* rules = list(&count);
  // Every rule is checked before any is registered.
  std::vector<std::string> names;
  std::vector<const compute::update_rule*> fresh;
  for (size_t i = 0; i < count; ++i) {
    std::string name{rules[i]->name()};
    if (!compute::valid_rule_name(name))
      return make_error(errc::invalid_config, path + ": rule name '" + name +
                                                "': use 1 to 64 of a-z, 0-9 and '_', starting "
                                                "with a letter");
    auto held = registry.find(name);
    if (held && held.get() != rules[i])
      return make_error(errc::invalid_config,
                        path + ": a rule named '" + name + "' is registered already");
    if (!held)
      fresh.push_back(rules[i]);
    names.push_back(std::move(name));
  }
  // The plugin owns its rules and is never unloaded: the registry holds them without owning.
  for (auto* rule : fresh)
    if (auto err = registry.add(
          std::shared_ptr<const compute::update_rule>{rule, [](const compute::update_rule*) {}}))
      return make_error(err);
  return names;
}

} // namespace darcy::ops
