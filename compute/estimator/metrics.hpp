// Streaming metrics of the Estimator, in the paper's update/value split: `update` folds one
// batch into running statistics and `value` reads the metric. Folding batches one by one gives
// exactly the metric of their concatenation: the AUCs keep one weight pair per distinct score.
//
//   auto auc = streaming_metric::make(metric_kind::auc_roc);
//   for (auto& batch : batches)
//     if (auto err = auc->update({batch.scores, batch.labels}))
//       return err;
//   double v = auc->value();
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "messages/errc.hpp"

namespace darcy::compute::estimator {

enum class metric_kind : uint8_t {
  /// Weighted mean of the predictions; labels are ignored.
  mean,
  /// Share of examples whose prediction (a class id) equals the label.
  accuracy,
  /// Binary, at the threshold: TP / (TP + FP), a prediction p counting as positive when
  /// p > threshold. Labels are 0 or 1.
  precision,
  /// Binary, at the threshold: TP / (TP + FN).
  recall,
  /// Area under the ROC curve: the chance that a positive scores above a negative, ties
  /// counting one half.
  auc_roc,
  /// Area under the precision-recall curve as average precision: Σ (R_k − R_{k−1}) · P_k over
  /// the distinct scores in descending order.
  auc_pr,
  /// Binary cross-entropy of probabilities clipped to [1e-7, 1 − 1e-7].
  log_loss,
  /// Mean squared error of the predictions against the labels.
  mse,
};

/// "auc_roc" and so on: the metric's name in summaries and evaluation results.
std::string to_string(metric_kind kind);

/// One batch: predictions and labels of equal length, and either no weights (all 1) or one
/// non-negative weight per example.
struct metric_batch {
  std::span<const double> predictions;
  std::span<const double> labels;
  std::span<const double> weights = {};
};

class streaming_metric {
public:
  /// errc::invalid_config when the threshold is not finite.
  static plain_expected<streaming_metric> make(metric_kind kind, double threshold = 0.5);

  /// Folds `batch` in, or changes nothing and fails with errc::invalid_argument: lengths that
  /// differ, a non-finite value, a negative weight, or a label other than 0 and 1 for a
  /// binary metric (precision, recall, the AUCs, log loss).
  plain_error update(const metric_batch& batch);

  /// Folds in the statistics of another replica's metric of the same kind and threshold, or
  /// fails with errc::invalid_argument.
  plain_error merge(const streaming_metric& other);

  /// The metric over everything folded in so far; NaN while it is undefined (no weight yet,
  /// no predicted positive for precision, no positive or no negative for the AUCs).
  double value() const;

  void reset();

  metric_kind kind() const { return kind_; }
  double threshold() const { return threshold_; }

private:
  streaming_metric(metric_kind kind, double threshold) : kind_(kind), threshold_(threshold) {}

  struct weights_at {
    double positive = 0;
    double negative = 0;
  };

  metric_kind kind_;
  double threshold_;
  double weight_ = 0;
  /// Σ w·v of the per-example value: the prediction (mean), correctness (accuracy), the squared
  /// error (mse) or the cross-entropy (log_loss).
  double sum_ = 0;
  double true_positive_ = 0;
  double false_positive_ = 0;
  double false_negative_ = 0;
  /// The AUCs: positive and negative weight per distinct score.
  std::map<double, weights_at> by_score_;
};

} // namespace darcy::compute::estimator
