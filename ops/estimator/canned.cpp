#include "ops/estimator/canned.hpp"

#include <memory>

#include "messages/error.hpp"
#include "ops/estimator/layers.hpp"

namespace darcy::ops::estimator {

namespace {

using compute::estimator::head;

using layer_ptr = std::shared_ptr<compute::estimator::input_layer<float>>;

/// Feature columns that own tables (embedding_column) keep their values in the column, not in
/// an estimator's variables: a model function over them serves the estimator that first called
/// it, and refuses another with a clear error rather than training the first one's tables.
/// (Columns backed by the embedding service, and models without tables, are free to share.)
class table_owner {
public:
  caf::error claim(model_context& ctx, std::initializer_list<const layer_ptr*> layers) {
    bool owns_tables = false;
    for (auto* l : layers)
      owns_tables = owns_tables || (*l && !(*l)->parameters().empty());
    if (!owns_tables)
      return {};
    auto* store = &ctx.variables();
    if (!owner_)
      owner_ = store;
    if (owner_ != store)
      return make_error(errc::invalid_config,
                        "canned model: its feature columns own embedding tables, which one "
                        "estimator trains: build a model function (and its columns) per estimator");
    return {};
  }

private:
  const variable_store* owner_ = nullptr;
};

struct parts {
  layer_ptr deep, wide;
  table_owner owner;
  std::vector<uint32_t> hidden;
  float dropout = 0;
  bool batch_norm = false;
  std::shared_ptr<head<float>> out;
};

caf::error check_units(const std::vector<uint32_t>& units, const char* what) {
  if (units.empty())
    return make_error(errc::invalid_config,
                      std::string{"canned estimator: "} + what + " needs hidden layers");
  for (auto u : units)
    if (u == 0)
      return make_error(errc::invalid_config, "canned estimator: a hidden layer of 0 units");
  return {};
}

caf::error check_dropout(float rate) {
  if (!(rate >= 0 && rate < 1))
    return make_error(errc::invalid_config, "canned estimator: dropout must be in [0, 1)");
  return {};
}

/// dropout(relu([batch_norm](dense(x)))) for each of `units`, the layers named
/// "<prefix><i>".
tensor mlp(model_context& ctx, tensor x, const std::vector<uint32_t>& units,
           const std::string& prefix, bool normalize, float rate) {
  for (size_t i = 0; i < units.size(); ++i) {
    auto name = prefix + std::to_string(i);
    x = dense(ctx, x, units[i], name);
    if (normalize)
      x = batch_norm(ctx, x, name + "/batch_norm");
    x = dropout(ctx, relu(ctx, x), rate, name + "/dropout");
  }
  return x;
}

caf::expected<model_fn> build(canned_options o, bool deep, bool wide) {
  if (deep && o.columns.empty())
    return make_error(errc::invalid_config, "canned estimator: the DNN needs feature columns");
  if (wide && o.linear_columns.empty())
    return make_error(errc::invalid_config,
                      "canned estimator: the linear model needs feature columns");
  if (deep)
    if (auto err = check_units(o.hidden_units, "the DNN"))
      return err;
  if (auto err = check_dropout(o.dropout))
    return err;
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
  p->batch_norm = o.batch_norm;
  p->out = std::make_shared<head<float>>(std::move(*h));
  return model_fn{
    [p](model_context& ctx, const batch& b, const params&) -> caf::expected<estimator_spec> {
      if (auto err = p->owner.claim(ctx, {&p->deep, &p->wide}))
        return err;
      auto units = p->out->logits_dimension();
      std::optional<tensor> logits;
      if (p->deep) {
        auto x = input_layer(ctx, b.features, *p->deep);
        if (!x)
          return std::move(x.error());
        auto h = mlp(ctx, *x, p->hidden, "dnn/hidden", p->batch_norm, p->dropout);
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

struct dlrm_parts {
  layer_ptr dense, sparse;
  table_owner owner;
  dlrm_options options;
  std::shared_ptr<head<float>> out;
};

} // namespace

caf::expected<model_fn> dlrm_classifier(dlrm_options o) {
  if (o.dense_columns.empty() || o.embedding_columns.empty())
    return make_error(errc::invalid_config,
                      "dlrm_classifier: needs dense columns and embedding columns");
  if (auto err = check_units(o.bottom_units, "the bottom MLP"))
    return err;
  if (auto err = check_units(o.top_units, "the top MLP"))
    return err;
  if (auto err = check_dropout(o.dropout))
    return err;
  for (auto& c : o.embedding_columns)
    if (c->width() % o.bottom_units.back() != 0)
      return make_error(errc::invalid_config,
                        "dlrm_classifier: embedding column " + c->name() + " is " +
                          std::to_string(c->width()) +
                          " wide, not a multiple of the bottom MLP's output " +
                          std::to_string(o.bottom_units.back()));
  auto h = head<float>::make({{.kind = compute::estimator::head_kind::binary}});
  if (!h)
    return make_error(h.error());
  auto p = std::make_shared<dlrm_parts>();
  p->dense = std::make_shared<compute::estimator::input_layer<float>>(std::move(o.dense_columns));
  p->sparse =
    std::make_shared<compute::estimator::input_layer<float>>(std::move(o.embedding_columns));
  p->options = std::move(o);
  p->out = std::make_shared<head<float>>(std::move(*h));
  return model_fn{
    [p](model_context& ctx, const batch& b, const params&) -> caf::expected<estimator_spec> {
      if (auto err = p->owner.claim(ctx, {&p->dense, &p->sparse}))
        return err;
      auto& o = p->options;
      auto x = input_layer(ctx, b.features, *p->dense);
      if (!x)
        return std::move(x.error());
      auto e = input_layer(ctx, b.features, *p->sparse);
      if (!e)
        return std::move(e.error());
      auto bottom = mlp(ctx, *x, o.bottom_units, "dlrm/bottom", o.batch_norm, 0);
      auto z = dot_interaction(ctx, bottom, *e);
      if (!z)
        return std::move(z.error());
      auto top = mlp(ctx, *z, o.top_units, "dlrm/top", o.batch_norm, o.dropout);
      return head_spec(ctx, *p->out, dense(ctx, top, 1, "dlrm/logits"), b);
    }};
}

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
