// The bench's rule plugin: Adagrad (TensorFlow's ApplyAdagrad, as the built-in rule applies it)
// written as a user writes a rule, so that `darcy-bench embedding` measures what the plugin path
// costs against the built-in one (rule_update_vs_builtin).
#include <cmath>

#include "compute/rules/rule_plugin.hpp"

namespace {

using namespace darcy::compute;

class plugin_adagrad final : public update_rule {
public:
  std::string_view name() const override { return "plugin_adagrad"; }
  std::vector<rule_slot> slots() const override {
    return {{"accumulator", slot_shape::per_value, 0, "initial_accumulator"}};
  }
  std::vector<rule_param> params() const override {
    return {{"learning_rate", 0.01f}, {"initial_accumulator", 0.1f}};
  }
  void update(const rule_context& c, std::span<const row_update> rows) const override {
    const float lr = c.params[0];
    for (auto& r : rows) {
      float* __restrict w = r.values;
      float* __restrict acc = r.slots;
      const float* __restrict g = r.grad;
      for (size_t i = 0; i < c.dim; ++i) {
        acc[i] += g[i] * g[i];
        w[i] -= lr * g[i] / std::sqrt(acc[i]);
      }
    }
  }
};

} // namespace

DARCY_RULE_PLUGIN(plugin_adagrad)
