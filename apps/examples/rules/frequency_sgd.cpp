// An update rule as a plugin (docs/update-rules.md): SGD whose rate falls with how often the
// row was looked up, learning_rate / sqrt(1 + frequency / warmup), so that rare keys move fast
// and hot keys settle. Built as libdarcy_rule_frequency_sgd.so; load it with
// `darcy node --plugin` or darcy.load_plugin, then name "frequency_sgd" in a table's config.
#include <cmath>

#include "compute/rules/rule_plugin.hpp"

namespace {

using namespace darcy::compute;

class frequency_sgd final : public update_rule {
public:
  std::string_view name() const override { return "frequency_sgd"; }
  std::vector<rule_param> params() const override {
    return {{"learning_rate", 0.1f}, {"warmup", 100.0f}};
  }
  darcy::plain_error check(std::span<const float> v) const override {
    if (!(v[0] > 0) || !(v[1] > 0))
      return {darcy::errc::invalid_config, "frequency_sgd: learning_rate and warmup must be > 0"};
    return {};
  }
  void update(const rule_context& c, std::span<const row_update> rows) const override {
    for (auto& r : rows) {
      auto rate = c.params[0] / std::sqrt(1.0f + static_cast<float>(r.frequency) / c.params[1]);
      for (size_t i = 0; i < c.dim; ++i)
        r.values[i] -= rate * r.grad[i];
    }
  }
};

} // namespace

DARCY_RULE_PLUGIN(frequency_sgd)
