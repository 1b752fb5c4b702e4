// What a model function returns for one call: the predictions in every mode, the loss in
// train and eval, the train op in train, the evaluation metrics in eval and the export outputs.
// head_spec builds it from a head and the logits, which is what most model functions end with.
//
//   caf::expected<estimator_spec> my_model(model_context& ctx, const batch& b, const params& p) {
//     auto logits = dense(ctx, relu(ctx, dense(ctx, ctx.constant(b.dense), 64, "h")), 3, "out");
//     return head_spec(ctx, my_head, logits, b);
//   }
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "compute/estimator/heads.hpp"
#include "ops/estimator/input.hpp"
#include "ops/estimator/model_context.hpp"

namespace darcy::ops::estimator {

struct estimator_spec {
  /// One row per example: the head's probabilities or regression values.
  matrix predictions;
  /// Heads over label tables (sampled_softmax_head): each example's predicted labels, best
  /// first, scored by the same row of `predictions`. Empty for the other heads.
  std::vector<std::vector<std::string>> predicted_labels;
  /// The batch's loss (train and eval).
  float loss = 0;
  /// Train mode: adds dL/d(variable) to every variable's grad; the Estimator then steps its
  /// optimizer. Empty in the other modes.
  std::function<void()> train_op;
  /// Eval mode: fresh metrics, and how a batch folds into them.
  std::function<std::vector<compute::estimator::named_metric>()> make_metrics;
  std::function<caf::error(std::vector<compute::estimator::named_metric>&)> update_metrics;
  /// Named outputs an export serves ("probabilities", "classes", ...).
  std::map<std::string, matrix> export_outputs;
};

/// The spec of a model ending in `h` applied to `logits`. Needs b.labels in train and eval
/// mode (errc::invalid_argument otherwise, or from the head for labels that do not fit it).
caf::expected<estimator_spec> head_spec(model_context& ctx, compute::estimator::head<float>& h,
                                        tensor logits, const batch& b);

} // namespace darcy::ops::estimator
