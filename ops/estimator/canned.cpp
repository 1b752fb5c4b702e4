#include "ops/estimator/canned.hpp"

#include <memory>

#include "messages/error.hpp"
#include "ops/estimator/layers.hpp"

namespace darcy::ops::estimator {

namespace {

using compute::estimator::head;

struct parts {
  std::shared_ptr<compute::estimator::input_layer<float>> deep, wide;
  std::vector<uint32_t> hidden;
  float dropout = 0;
  std::shared_ptr<head<float>> out;
};

caf::expected<model_fn> build(canned_options o, bool deep, bool wide) {
  if (deep && o.columns.empty())
    return make_error(errc::invalid_config, "canned estimator: the DNN needs feature columns");
  if (wide && o.linear_columns.empty())
    return make_error(errc::invalid_config,
                      "canned estimator: the linear model needs feature columns");
  if (deep && o.hidden_units.empty())
    return make_error(errc::invalid_config, "canned estimator: the DNN needs hidden layers");
  for (auto u : o.hidden_units)
    if (u == 0)
      return make_error(errc::invalid_config, "canned estimator: a hidden layer of 0 units");
  if (!(o.dropout >= 0 && o.dropout < 1))
    return make_error(errc::invalid_config, "canned estimator: dropout must be in [0, 1)");
  auto h = head<float>::make({o.head});
  if (!h)
    return make_error(h.error());
  auto p = std::make_shared<parts>();
  if (deep)
    p->deep = std::make_shared<compute::estimator::input_layer<float>>(std::move(o.columns));
  if (wide)
    p->wide = std::make_shared<compute::estimator::input_layer<float>>(std::move(o.linear_columns));
  p->hidden = std::move(o.hidden_units);
  p->dropout = o.dropout;
  p->out = std::make_shared<head<float>>(std::move(*h));
  return model_fn{[p](model_context& ctx, const batch& b,
                      const params&) -> caf::expected<estimator_spec> {
    auto units = p->out->logits_dimension();
    std::optional<tensor> logits;
    if (p->deep) {
      auto x = input_layer(ctx, b.features, *p->deep);
      if (!x)
        return std::move(x.error());
      auto h = *x;
      for (size_t i = 0; i < p->hidden.size(); ++i) {
        auto name = "dnn/hidden" + std::to_string(i);
        h =
          dropout(ctx, relu(ctx, dense(ctx, h, p->hidden[i], name)), p->dropout, name + "/dropout");
      }
      logits = dense(ctx, h, units, "dnn/logits");
    }
    if (p->wide) {
      auto x = input_layer(ctx, b.features, *p->wide);
      if (!x)
        return std::move(x.error());
      auto linear = dense(ctx, *x, units, "linear/logits");
      logits = logits ? add(ctx, *logits, linear) : linear;
    }
    return head_spec(ctx, *p->out, *logits, b);
  }};
}

} // namespace

caf::expected<model_fn> linear_model(canned_options o) {
  return build(std::move(o), false, true);
}

caf::expected<model_fn> dnn_model(canned_options o) {
  return build(std::move(o), true, false);
}

caf::expected<model_fn> dnn_linear_combined_model(canned_options o) {
  return build(std::move(o), true, true);
}

} // namespace darcy::ops::estimator
