// Heads of the Estimator: the loss, its gradient with respect to the logits, the predictions
// and the evaluation metrics of a model's last layer. A multi-head is a weighted sum of heads
// over consecutive slices of the logits and of the label columns.
//
//   auto h = head<float>::make({{.kind = head_kind::multi_class, .classes = 10}});
//   auto loss = h->loss(logits, labels);   // labels: one class id per row
//   matrix dlogits = h->gradient();        // feed to the model's backward pass
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compute/estimator/metrics.hpp"
#include "compute/nn/tensor.hpp"
#include "messages/errc.hpp"

namespace darcy::compute::estimator {

enum class head_kind : uint8_t {
  /// One logit; sigmoid cross-entropy; labels 0 or 1.
  binary,
  /// `classes` logits; softmax cross-entropy; labels are class ids in [0, classes).
  multi_class,
  /// `label_dimension` outputs; squared error averaged over the label dimensions.
  regression,
};

struct head_config {
  head_kind kind = head_kind::binary;
  /// Prefix of the head's metric names ("genre/accuracy"); may be empty for a single head.
  std::string name;
  uint32_t classes = 2;
  uint32_t label_dimension = 1;
  /// Weight of this head's loss in a multi-head.
  double weight = 1;
};

/// A metric with the name it is reported under.
struct named_metric {
  std::string name;
  streaming_metric metric;
};

template <class T>
class head {
public:
  using matrix = nn::matrix_t<T>;

  /// One config: a plain head; several: a multi-head. errc::invalid_config for no head, a
  /// multi-class head of fewer than 2 classes, a regression head of dimension 0, a negative or
  /// non-finite weight, or two heads of one name.
  static plain_expected<head> make(std::vector<head_config> parts);

  /// Logit columns the model must produce: 1, classes or label_dimension per head, in order.
  uint32_t logits_dimension() const { return logits_dimension_; }
  /// Label columns: 1 per binary or multi-class head, label_dimension per regression head.
  uint32_t label_columns() const { return label_columns_; }

  /// The weighted mean loss of the batch (0 when every weight is 0), keeping dL/dlogits for
  /// gradient(). errc::invalid_argument, and no change, for a shape mismatch, non-finite
  /// logits or labels, a label outside the head's range, or weights of the wrong length or sign.
  plain_expected<T> loss(const matrix& logits, const matrix& labels,
                         std::span<const T> weights = {});

  /// dL/dlogits of the last successful loss().
  const matrix& gradient() const { return gradient_; }

  /// Probabilities (binary: of class 1; multi-class: one column per class) or regression
  /// values, laid out like the logits. Precondition: logits.cols() == logits_dimension().
  matrix predictions(const matrix& logits) const;

  /// The predicted class of every row for head `part` (binary: p > 0.5; multi-class: argmax;
  /// regression: not a class, the first output).
  std::vector<double> predicted_classes(const matrix& logits, size_t part) const;

  /// Fresh metrics: accuracy, AUC (ROC, PR), precision, recall and log loss per binary head;
  /// accuracy per multi-class head; MSE per regression head.
  std::vector<named_metric> make_metrics() const;

  /// Folds a batch into metrics made by make_metrics(); the same checks as loss().
  plain_error update_metrics(std::vector<named_metric>& metrics, const matrix& logits,
                             const matrix& labels, std::span<const T> weights = {}) const;

  const std::vector<head_config>& parts() const { return parts_; }

private:
  explicit head(std::vector<head_config> parts);
  plain_error check(const matrix& logits, const matrix& labels, std::span<const T> weights) const;

  std::vector<head_config> parts_;
  /// First logit and label column of each part.
  std::vector<uint32_t> logit_at_, label_at_;
  uint32_t logits_dimension_ = 0, label_columns_ = 0;
  matrix gradient_;
};

} // namespace darcy::compute::estimator
