// Rule plugins that load_plugin must refuse, one per library, chosen by a definition: a
// plugin built for another rule ABI (DARCY_TEST_ABI_MISMATCH), one whose rule has a malformed
// name (DARCY_TEST_BAD_NAME), and a library that exports nothing (DARCY_TEST_NOT_A_PLUGIN).
#include "compute/rules/rule_plugin.hpp"

namespace {

using namespace darcy::compute;

class named final : public update_rule {
public:
#if defined(DARCY_TEST_BAD_NAME)
  std::string_view name() const override {
    return "Bad-Name";
  }
#else
  std::string_view name() const override {
    return "mismatched";
  }
#endif
  std::vector<rule_param> params() const override {
    return {};
  }
  void update(const rule_context&, std::span<const row_update>) const override {
  }
};

} // namespace

#if defined(DARCY_TEST_ABI_MISMATCH)
extern "C" __attribute__((visibility("default"))) uint32_t darcy_rule_abi() {
  return rule_abi_version + 1;
}
extern "C" __attribute__((visibility("default"))) const update_rule* const* darcy_rules(
  size_t* count) {
  return darcy::compute::detail::plugin_rules<named>(count);
}
#elif defined(DARCY_TEST_BAD_NAME)
DARCY_RULE_PLUGIN(named)
#else
extern "C" __attribute__((visibility("default"))) int darcy_nothing_here() {
  return 0;
}
#endif
