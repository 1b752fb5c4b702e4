#include "compute/estimator/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace darcy::compute::estimator {

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double clip = 1e-7;

bool binary(metric_kind kind) {
  switch (kind) {
    case metric_kind::precision:
    case metric_kind::recall:
    case metric_kind::auc_roc:
    case metric_kind::auc_pr:
    case metric_kind::log_loss:
      return true;
    default:
      return false;
  }
}

plain_error bad(std::string what) {
  return {errc::invalid_argument, "metric: " + std::move(what)};
}

double ratio(double num, double den) {
  return den > 0 ? num / den : nan;
}

} // namespace

std::string to_string(metric_kind kind) {
  switch (kind) {
    case metric_kind::mean:
      return "mean";
    case metric_kind::accuracy:
      return "accuracy";
    case metric_kind::precision:
      return "precision";
    case metric_kind::recall:
      return "recall";
    case metric_kind::auc_roc:
      return "auc_roc";
    case metric_kind::auc_pr:
      return "auc_pr";
    case metric_kind::log_loss:
      return "log_loss";
    case metric_kind::mse:
      return "mse";
  }
  return "?";
}

plain_expected<streaming_metric> streaming_metric::make(metric_kind kind, double threshold) {
  if (!std::isfinite(threshold))
    return plain_error{errc::invalid_config, "metric: the threshold must be finite"};
  return streaming_metric{kind, threshold};
}

plain_error streaming_metric::update(const metric_batch& batch) {
  auto n = batch.predictions.size();
  if (batch.labels.size() != n && kind_ != metric_kind::mean)
    return bad(std::to_string(n) + " predictions but " + std::to_string(batch.labels.size()) +
               " labels");
  if (!batch.weights.empty() && batch.weights.size() != n)
    return bad(std::to_string(n) + " predictions but " + std::to_string(batch.weights.size()) +
               " weights");
  auto label_of = [&](size_t i) { return kind_ == metric_kind::mean ? 0.0 : batch.labels[i]; };
  auto weight_of = [&](size_t i) { return batch.weights.empty() ? 1.0 : batch.weights[i]; };
  for (size_t i = 0; i < n; ++i) {
    auto p = batch.predictions[i], y = label_of(i), w = weight_of(i);
    if (!std::isfinite(p) || !std::isfinite(y))
      return bad("example " + std::to_string(i) + " has a non-finite prediction or label");
    if (!(w >= 0) || !std::isfinite(w))
      return bad("example " + std::to_string(i) + " has a negative or non-finite weight");
    if (binary(kind_) && y != 0 && y != 1)
      return bad(to_string(kind_) + " needs labels 0 or 1, example " + std::to_string(i) + " has " +
                 std::to_string(y));
  }
  for (size_t i = 0; i < n; ++i) {
    auto p = batch.predictions[i], y = label_of(i), w = weight_of(i);
    weight_ += w;
    switch (kind_) {
      case metric_kind::mean:
        sum_ += w * p;
        break;
      case metric_kind::accuracy:
        sum_ += w * (p == y);
        break;
      case metric_kind::mse:
        sum_ += w * (p - y) * (p - y);
        break;
      case metric_kind::log_loss: {
        auto q = std::clamp(p, clip, 1 - clip);
        sum_ -= w * (y == 1 ? std::log(q) : std::log1p(-q));
        break;
      }
      case metric_kind::precision:
      case metric_kind::recall: {
        bool predicted = p > threshold_;
        true_positive_ += w * (predicted && y == 1);
        false_positive_ += w * (predicted && y == 0);
        false_negative_ += w * (!predicted && y == 1);
        break;
      }
      case metric_kind::auc_roc:
      case metric_kind::auc_pr: {
        auto& at = by_score_[p == 0 ? 0.0 : p]; // -0 and +0 are one score
        (y == 1 ? at.positive : at.negative) += w;
        break;
      }
    }
  }
  return {};
}

plain_error streaming_metric::merge(const streaming_metric& other) {
  if (other.kind_ != kind_ || other.threshold_ != threshold_)
    return bad("cannot merge " + to_string(other.kind_) + " into " + to_string(kind_) +
               " (kinds and thresholds must match)");
  weight_ += other.weight_;
  sum_ += other.sum_;
  true_positive_ += other.true_positive_;
  false_positive_ += other.false_positive_;
  false_negative_ += other.false_negative_;
  for (auto& [score, w] : other.by_score_) {
    auto& at = by_score_[score];
    at.positive += w.positive;
    at.negative += w.negative;
  }
  return {};
}

double streaming_metric::value() const {
  switch (kind_) {
    case metric_kind::mean:
    case metric_kind::accuracy:
    case metric_kind::mse:
    case metric_kind::log_loss:
      return ratio(sum_, weight_);
    case metric_kind::precision:
      return ratio(true_positive_, true_positive_ + false_positive_);
    case metric_kind::recall:
      return ratio(true_positive_, true_positive_ + false_negative_);
    case metric_kind::auc_roc: {
      // Ascending scores: each positive beats the negatives below it and ties half of its own.
      double negatives_below = 0, pairs = 0, positives = 0;
      for (auto& [score, w] : by_score_) {
        pairs += w.positive * (negatives_below + 0.5 * w.negative);
        negatives_below += w.negative;
        positives += w.positive;
      }
      return ratio(pairs, positives * negatives_below);
    }
    case metric_kind::auc_pr: {
      double positives = 0;
      for (auto& [score, w] : by_score_)
        positives += w.positive;
      double tp = 0, fp = 0, area = 0;
      for (auto it = by_score_.rbegin(); it != by_score_.rend(); ++it) {
        tp += it->second.positive;
        fp += it->second.negative;
        if (it->second.positive > 0)
          area += it->second.positive / positives * (tp / (tp + fp));
      }
      return positives > 0 ? area : nan;
    }
  }
  return nan;
}

void streaming_metric::reset() {
  *this = streaming_metric{kind_, threshold_};
}

} // namespace darcy::compute::estimator
