// The sampled-softmax head over the dynamic embedding service, for label sets with no bound
// (the DynamicEmbedding paper's Sparse2Label): labels are raw strings whose output rows live in
// a service table, grown as labels first appear. Training scores each example's labels against
// negatives drawn by the service's candidate sampler; evaluation and prediction take the top k
// of every row of the table.
//
//   auto h = std::make_shared<sampled_softmax_head>(session, sampled_softmax_head_config{
//     .label_key = "keywords", .labels = {.name = "keywords", .dim = 64}});
//   // at the end of a model function, with `out` a batch × 64 tensor:
//   return h->spec(ctx, out, b);   // metrics "recall_at_10", "recall_at_1"; labels predicted
#pragma once

#include <cstdint>
#include <string>

#include <caf/expected.hpp>

#include "messages/embedding/embedding_config.hpp"
#include "ops/estimator/estimator_spec.hpp"
#include "ops/session.hpp"

namespace darcy::ops::estimator {

struct sampled_softmax_head_config {
  /// The string feature that holds each example's labels (at least one per example in train
  /// and eval; several share the example's probability mass equally).
  std::string label_key = "labels";
  /// The output table; its dim is the width the model's last layer must have, its sampler
  /// (de_config::sampler) draws the negatives.
  de_config labels;
  /// Negatives per training batch, drawn among the labels seen so far (fewer while the table
  /// holds fewer rows besides the batch's labels).
  uint32_t num_sampled = 64;
  /// While the label table holds at most this many rows, training scores every label
  /// (ops::full_logits, computed on the shards) instead of sampling negatives; 0: always
  /// sample.
  uint64_t full_logits_below = 0;
  /// Labels predicted per example, and the k of the metric recall_at_<k>: the exact top k of
  /// the label table, or its approximate top k when the table keeps an ANN index (labels.ann).
  uint32_t k = 10;
};

class sampled_softmax_head {
public:
  /// `s` holds the label table and must outlive the head. errc::invalid_config for an empty
  /// label key, a table of dimension 0, num_sampled 0 or k 0.
  static caf::expected<std::shared_ptr<sampled_softmax_head>> make(session& s,
                                                                   sampled_softmax_head_config c);

  /// The spec of a model whose last layer `output` (batch × labels.dim) scores labels by inner
  /// product. Train: the sampled-softmax loss (the training step's sampled negatives, log-Q
  /// corrected), or the full softmax's while the table holds at most full_logits_below rows,
  /// whose train op sends the label rows' gradients to the service. Eval: metrics
  /// recall_at_<k> and recall_at_1 (the share of an example's labels among its top k, averaged
  /// over examples) from the whole table, and a loss of 0; eval and predict create no rows.
  /// Predictions: the top k scores per example, and their labels in predicted_labels.
  /// errc::dimension_mismatch for an output of the wrong width; errc::invalid_argument for a
  /// missing label feature or an example without labels (train and eval).
  caf::expected<estimator_spec> spec(model_context& ctx, tensor output, const batch& b);

  const sampled_softmax_head_config& config() const { return config_; }

private:
  sampled_softmax_head(session& s, sampled_softmax_head_config c)
    : session_(s), config_(std::move(c)) {}

  session& session_;
  sampled_softmax_head_config config_;
  /// Training steps taken, the step the service's optimizer sees.
  int64_t step_ = 0;
};

} // namespace darcy::ops::estimator
