#include "compute/estimator/heads.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "compute/finite.hpp"
#include "compute/nn/softmax_cross_entropy.hpp"

namespace darcy::compute::estimator {

namespace {

plain_error bad_input(std::string what) {
  return {errc::invalid_argument, "head: " + std::move(what)};
}

uint32_t logit_width(const head_config& c) {
  switch (c.kind) {
    case head_kind::binary:
      return 1;
    case head_kind::multi_class:
      return c.classes;
    case head_kind::regression:
      return c.label_dimension;
  }
  return 0;
}

uint32_t label_width(const head_config& c) {
  return c.kind == head_kind::regression ? c.label_dimension : 1;
}

template <class T>
T sigmoid(T z) {
  return z >= 0 ? T{1} / (T{1} + std::exp(-z)) : std::exp(z) / (T{1} + std::exp(z));
}

} // namespace

template <class T>
plain_expected<head<T>> head<T>::make(std::vector<head_config> parts) {
  if (parts.empty())
    return plain_error{errc::invalid_config, "head: at least one head is needed"};
  std::set<std::string> names;
  for (auto& p : parts) {
    if (p.kind == head_kind::multi_class && p.classes < 2)
      return plain_error{errc::invalid_config, "head: a multi-class head needs classes >= 2"};
    if (p.kind == head_kind::regression && p.label_dimension == 0)
      return plain_error{errc::invalid_config,
                         "head: a regression head needs label_dimension >= 1"};
    if (!std::isfinite(p.weight) || p.weight < 0)
      return plain_error{errc::invalid_config, "head: weights must be finite and >= 0"};
    if (!names.insert(p.name).second)
      return plain_error{errc::invalid_config, "head: two heads are named '" + p.name + "'"};
  }
  return head{std::move(parts)};
}

template <class T>
head<T>::head(std::vector<head_config> parts) : parts_(std::move(parts)) {
  for (auto& p : parts_) {
    logit_at_.push_back(logits_dimension_);
    label_at_.push_back(label_columns_);
    logits_dimension_ += logit_width(p);
    label_columns_ += label_width(p);
  }
}

template <class T>
plain_error head<T>::check(const matrix& logits, const matrix& labels,
                           std::span<const T> weights) const {
  if (logits.cols() != logits_dimension_)
    return bad_input("the logits have " + std::to_string(logits.cols()) +
                     " columns, the head needs " + std::to_string(logits_dimension_));
  if (labels.cols() != label_columns_ || labels.rows() != logits.rows())
    return bad_input("labels of " + std::to_string(labels.rows()) + " x " +
                     std::to_string(labels.cols()) + " for " + std::to_string(logits.rows()) +
                     " rows of logits; the head needs " + std::to_string(label_columns_) +
                     " label columns");
  if (!weights.empty() && weights.size() != static_cast<size_t>(logits.rows()))
    return bad_input(std::to_string(weights.size()) + " weights for " +
                     std::to_string(logits.rows()) + " rows");
  for (auto w : weights)
    if (!std::isfinite(w) || w < 0)
      return bad_input("weights must be finite and >= 0");
  if (!all_finite(logits) || !all_finite(labels))
    return bad_input("non-finite logits or labels");
  for (size_t h = 0; h < parts_.size(); ++h) {
    auto& p = parts_[h];
    if (p.kind == head_kind::regression)
      continue;
    for (Eigen::Index r = 0; r < labels.rows(); ++r) {
      auto y = labels(r, label_at_[h]);
      bool ok = p.kind == head_kind::binary ? (y == 0 || y == 1)
                                            : (y >= 0 && y < p.classes && y == std::floor(y));
      if (!ok)
        return bad_input("row " + std::to_string(r) + " has label " + std::to_string(y) +
                         (p.kind == head_kind::binary
                            ? ", a binary head needs 0 or 1"
                            : ", outside [0, " + std::to_string(p.classes) + ")"));
    }
  }
  return {};
}

template <class T>
plain_expected<T> head<T>::loss(const matrix& logits, const matrix& labels,
                                std::span<const T> weights) {
  if (auto err = check(logits, labels, weights))
    return err;
  auto rows = logits.rows();
  auto weight = [&](Eigen::Index r) { return weights.empty() ? T{1} : weights[r]; };
  T total_weight = 0;
  for (Eigen::Index r = 0; r < rows; ++r)
    total_weight += weight(r);
  gradient_ = matrix::Zero(rows, logits_dimension_);
  if (total_weight == 0)
    return T{0};
  T loss = 0;
  for (size_t h = 0; h < parts_.size(); ++h) {
    auto& p = parts_[h];
    auto at = logit_at_[h], y_at = label_at_[h];
    auto scale = static_cast<T>(p.weight) / total_weight;
    for (Eigen::Index r = 0; r < rows; ++r) {
      auto w = weight(r) * scale;
      switch (p.kind) {
        case head_kind::binary: {
          auto z = logits(r, at), y = labels(r, y_at);
          loss += w * (std::max(z, T{0}) - z * y + std::log1p(std::exp(-std::abs(z))));
          gradient_(r, at) = w * (sigmoid(z) - y);
          break;
        }
        case head_kind::multi_class: {
          auto z = logits.row(r).segment(at, p.classes);
          auto max = z.maxCoeff();
          auto e = (z.array() - max).exp();
          auto sum = e.sum();
          auto y = static_cast<Eigen::Index>(labels(r, y_at));
          loss += w * (std::log(sum) + max - z(y));
          gradient_.row(r).segment(at, p.classes) = w * (e / sum).matrix();
          gradient_(r, at + y) -= w;
          break;
        }
        case head_kind::regression: {
          auto d = logits.row(r).segment(at, p.label_dimension) -
                   labels.row(r).segment(y_at, p.label_dimension);
          auto per_dim = w / static_cast<T>(p.label_dimension);
          loss += per_dim * d.squaredNorm();
          gradient_.row(r).segment(at, p.label_dimension) = 2 * per_dim * d;
          break;
        }
      }
    }
  }
  return loss;
}

template <class T>
auto head<T>::predictions(const matrix& logits) const -> matrix {
  matrix out = logits;
  for (size_t h = 0; h < parts_.size(); ++h) {
    auto& p = parts_[h];
    auto at = logit_at_[h];
    if (p.kind == head_kind::binary)
      for (Eigen::Index r = 0; r < logits.rows(); ++r)
        out(r, at) = sigmoid(logits(r, at));
    else if (p.kind == head_kind::multi_class)
      out.middleCols(at, p.classes) = nn::softmax_rows<T>(logits.middleCols(at, p.classes));
  }
  return out;
}

template <class T>
std::vector<double> head<T>::predicted_classes(const matrix& logits, size_t part) const {
  auto& p = parts_.at(part);
  auto at = logit_at_[part];
  std::vector<double> classes(static_cast<size_t>(logits.rows()));
  for (Eigen::Index r = 0; r < logits.rows(); ++r) {
    if (p.kind == head_kind::multi_class) {
      Eigen::Index best = 0;
      logits.row(r).segment(at, p.classes).maxCoeff(&best);
      classes[r] = static_cast<double>(best);
    } else if (p.kind == head_kind::binary) {
      classes[r] = logits(r, at) > 0 ? 1 : 0;
    } else {
      classes[r] = logits(r, at);
    }
  }
  return classes;
}

template <class T>
std::vector<named_metric> head<T>::make_metrics() const {
  std::vector<named_metric> metrics;
  for (auto& p : parts_) {
    auto prefix = p.name.empty() ? std::string{} : p.name + "/";
    std::vector<metric_kind> kinds;
    if (p.kind == head_kind::binary)
      kinds = {metric_kind::accuracy,  metric_kind::auc_roc, metric_kind::auc_pr,
               metric_kind::precision, metric_kind::recall,  metric_kind::log_loss};
    else if (p.kind == head_kind::multi_class)
      kinds = {metric_kind::accuracy};
    else
      kinds = {metric_kind::mse};
    for (auto k : kinds)
      metrics.push_back({prefix + to_string(k), *streaming_metric::make(k)});
  }
  return metrics;
}

template <class T>
plain_error head<T>::update_metrics(std::vector<named_metric>& metrics, const matrix& logits,
                                    const matrix& labels, std::span<const T> weights) const {
  if (auto err = check(logits, labels, weights))
    return err;
  size_t expected = 0;
  for (auto& p : parts_)
    expected += p.kind == head_kind::binary ? 6 : 1;
  if (metrics.size() != expected)
    return bad_input(std::to_string(metrics.size()) + " metrics given, make_metrics() makes " +
                     std::to_string(expected));
  auto rows = static_cast<size_t>(logits.rows());
  std::vector<double> w(weights.begin(), weights.end());
  auto probabilities = predictions(logits);
  size_t next = 0;
  for (size_t h = 0; h < parts_.size(); ++h) {
    auto& p = parts_[h];
    std::vector<double> classes = predicted_classes(logits, h), y, scores;
    if (p.kind == head_kind::regression) {
      // Every output against its label, each example's weight on each of its dimensions.
      std::vector<double> out, expected, wide;
      for (size_t r = 0; r < rows; ++r)
        for (uint32_t d = 0; d < p.label_dimension; ++d) {
          out.push_back(probabilities(r, logit_at_[h] + d));
          expected.push_back(labels(r, label_at_[h] + d));
          if (!w.empty())
            wide.push_back(w[r]);
        }
      if (auto err = metrics.at(next++).metric.update({out, expected, wide}))
        return err;
      continue;
    }
    for (size_t r = 0; r < rows; ++r) {
      y.push_back(labels(r, label_at_[h]));
      scores.push_back(probabilities(r, logit_at_[h]));
    }
    auto count = p.kind == head_kind::binary ? 6 : 1;
    for (int m = 0; m < count; ++m) {
      auto& metric = metrics.at(next++).metric;
      bool by_class = metric.kind() == metric_kind::accuracy;
      if (auto err = metric.update({by_class ? classes : scores, y, w}))
        return err;
    }
  }
  return {};
}

template class head<float>;
template class head<double>;

} // namespace darcy::compute::estimator
