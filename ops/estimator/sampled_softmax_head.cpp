#include "ops/estimator/sampled_softmax_head.hpp"

#include <functional>
#include <limits>
#include <set>

#include "compute/hash.hpp"
#include "compute/nn/softmax_cross_entropy.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/full_logits.hpp"

namespace darcy::ops::estimator {

namespace ce = compute::estimator;

namespace {

/// Shares of each example's labels found among its predictions: the first `k` of each.
std::vector<double> recall_at(const std::vector<std::vector<std::string>>& predicted,
                              const std::vector<std::vector<std::string>>& labels, size_t k) {
  std::vector<double> out(labels.size());
  for (size_t r = 0; r < labels.size(); ++r) {
    std::set<std::string> wanted{labels[r].begin(), labels[r].end()};
    size_t found = 0;
    for (size_t i = 0; i < std::min(k, predicted[r].size()); ++i)
      found += wanted.count(predicted[r][i]);
    out[r] = double(found) / double(wanted.size());
  }
  return out;
}

/// A seed for the step's negatives that depends only on the model's seed and the batch's
/// labels, so that a resumed run draws what an uninterrupted one drew.
uint64_t draw_seed(uint64_t seed, const std::vector<std::vector<std::string>>& labels) {
  uint64_t h = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (auto& row : labels)
    for (auto& key : row)
      h = (h ^ compute::hash_key(key)) * 0x100000001b3ULL;
  return h;
}

/// The soft-target cross-entropy of `logits` (sampled_logits_result or full_logits_result) as
/// the spec's loss, and a train op that sends its gradient to the label rows at `step` and
/// backpropagates the rest into `output`.
template <class Logits>
void train_on(model_context& ctx, tensor output, Logits logits, int64_t step,
              estimator_spec& spec) {
  matrix dlogits;
  spec.loss = compute::nn::soft_target_cross_entropy<float>(logits.logits, logits.labels, dlogits);
  spec.train_op = [&ctx, output, dlogits = std::move(dlogits),
                   kept = std::make_shared<Logits>(std::move(logits)), step] {
    auto dout = kept->backward(dlogits, step);
    if (!dout)
      return ctx.fail(std::move(dout.error()));
    ctx.backpropagate(output, std::move(*dout));
  };
}

} // namespace

caf::expected<std::shared_ptr<sampled_softmax_head>> sampled_softmax_head::make(
  session& s, sampled_softmax_head_config c) {
  if (c.label_key.empty() || c.labels.dim == 0 || c.num_sampled == 0 || c.k == 0)
    return make_error(errc::invalid_config,
                      "sampled_softmax_head: label_key, labels.dim, "
                      "num_sampled and k must be set and > 0");
  if (c.labels.name.empty())
    c.labels.name = c.label_key;
  return std::shared_ptr<sampled_softmax_head>{new sampled_softmax_head(s, std::move(c))};
}

caf::expected<estimator_spec> sampled_softmax_head::spec(model_context& ctx, tensor output,
                                                         const batch& b) {
  auto& z = ctx.value(output);
  if (z.cols() != static_cast<Eigen::Index>(config_.labels.dim))
    return make_error(errc::dimension_mismatch,
                      "sampled_softmax_head: the model gives " + std::to_string(z.cols()) +
                        " outputs per example, the label table '" + config_.labels.name +
                        "' has dimension " + std::to_string(config_.labels.dim));
  ctx.add_op([&] {
    return nlohmann::json{{"op", "sampled_softmax_head"},
                          {"output", output.id},
                          {"labels", config_.labels.name},
                          {"k", config_.k}};
  });
  const std::vector<std::vector<std::string>>* labels = nullptr;
  if (ctx.current_mode() != mode::predict) {
    auto feature = ce::find_feature(b.features, config_.label_key, 0);
    if (!feature)
      return make_error(feature.error());
    labels = &(*feature)->strings;
    for (size_t r = 0; r < labels->size(); ++r)
      if ((*labels)[r].empty())
        return make_error(errc::invalid_argument, "sampled_softmax_head: example " +
                                                    std::to_string(r) + " has no label in '" +
                                                    config_.label_key + "'");
  }
  estimator_spec spec;
  if (ctx.training() && config_.full_logits_below > 0) {
    auto full = full_logits(session_, *labels, z, config_.labels, config_.labels.name,
                            config_.full_logits_below);
    if (full) {
      train_on(ctx, output, std::move(*full), ++step_, spec);
      return spec;
    }
    if (!is(full.error(), errc::batch_too_large))
      return std::move(full.error());
  }
  if (ctx.training()) {
    // The label table grows with the data: fewer negatives while it holds fewer rows.
    auto logits = sampled_logits(session_, *labels, z, config_.num_sampled, config_.labels,
                                 config_.labels.name, draw_seed(ctx.seed(), *labels), true);
    if (!logits)
      return std::move(logits.error());
    train_on(ctx, output, std::move(*logits), ++step_, spec);
    return spec;
  }
  // A label table that keeps an ANN index answers from it (ops::approximate_top_k).
  auto top = config_.labels.ann.enabled
               ? approximate_top_k(session_, z, config_.k, config_.labels, config_.labels.name)
               : top_k(session_, z, config_.k, config_.labels, config_.labels.name);
  if (!top)
    return std::move(top.error());
  auto rows = static_cast<size_t>(z.rows());
  spec.predictions = matrix::Constant(z.rows(), config_.k, -std::numeric_limits<float>::infinity());
  spec.predicted_labels.resize(rows);
  for (size_t r = 0; r < rows && r + 1 < top->offsets.size(); ++r)
    for (auto i = top->offsets[r]; i < top->offsets[r + 1]; ++i) {
      spec.predictions(static_cast<Eigen::Index>(r), i - top->offsets[r]) = top->scores[i];
      spec.predicted_labels[r].push_back(top->keys[i]);
    }
  spec.export_outputs["scores"] = spec.predictions;
  if (ctx.current_mode() == mode::predict)
    return spec;
  auto at_k = "recall_at_" + std::to_string(config_.k);
  spec.make_metrics = [at_k] {
    std::vector<ce::named_metric> m;
    for (auto name : {at_k, std::string{"recall_at_1"}})
      m.push_back({name, *ce::streaming_metric::make(ce::metric_kind::mean)});
    return m;
  };
  spec.update_metrics = [k = config_.k, predicted = spec.predicted_labels,
                         labels = *labels](std::vector<ce::named_metric>& m) -> caf::error {
    for (size_t i = 0; i < m.size(); ++i) {
      auto shares = recall_at(predicted, labels, i == 0 ? k : 1);
      if (auto err = m[i].metric.update({shares, shares}))
        return make_error(err);
    }
    return {};
  };
  return spec;
}

} // namespace darcy::ops::estimator
