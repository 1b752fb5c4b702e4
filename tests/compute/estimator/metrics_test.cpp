#include "compute/estimator/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace darcy::compute::estimator {
namespace {

struct examples {
  std::vector<double> p, y, w;
};

/// Each metric over all of `e` at once, computed directly from its definition.
double one_shot(metric_kind kind, const examples& e, double threshold) {
  double wsum = 0, sum = 0, tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < e.p.size(); ++i) {
    auto p = e.p[i], y = e.y[i], w = e.w[i];
    wsum += w;
    if (kind == metric_kind::mean)
      sum += w * p;
    if (kind == metric_kind::accuracy)
      sum += p == y ? w : 0;
    if (kind == metric_kind::mse)
      sum += w * (p - y) * (p - y);
    if (kind == metric_kind::log_loss)
      sum -= w * (y * std::log(p) + (1 - y) * std::log(1 - p));
    tp += (p > threshold && y == 1) * w;
    fp += (p > threshold && y == 0) * w;
    fn += (p <= threshold && y == 1) * w;
  }
  switch (kind) {
    case metric_kind::precision:
      return tp / (tp + fp);
    case metric_kind::recall:
      return tp / (tp + fn);
    case metric_kind::auc_roc: { // every positive-negative pair
      double pairs = 0, total = 0;
      for (size_t i = 0; i < e.p.size(); ++i)
        for (size_t j = 0; j < e.p.size(); ++j)
          if (e.y[i] == 1 && e.y[j] == 0) {
            auto both = e.w[i] * e.w[j];
            total += both;
            pairs += e.p[i] > e.p[j] ? both : e.p[i] == e.p[j] ? both / 2 : 0;
          }
      return pairs / total;
    }
    case metric_kind::auc_pr: { // precision at each distinct score, weighted by recall gained
      std::vector<double> scores = e.p;
      std::sort(scores.begin(), scores.end());
      scores.erase(std::unique(scores.begin(), scores.end()), scores.end());
      double positives = 0, area = 0;
      for (size_t i = 0; i < e.p.size(); ++i)
        positives += e.y[i] * e.w[i];
      for (auto s : scores) {
        double above_tp = 0, above_fp = 0, at_tp = 0;
        for (size_t i = 0; i < e.p.size(); ++i)
          if (e.p[i] >= s) {
            (e.y[i] == 1 ? above_tp : above_fp) += e.w[i];
            at_tp += e.p[i] == s && e.y[i] == 1 ? e.w[i] : 0;
          }
        area += at_tp / positives * above_tp / (above_tp + above_fp);
      }
      return area;
    }
    default:
      return sum / wsum;
  }
}

examples random_examples(metric_kind kind, size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit{0.02, 0.98};
  std::uniform_int_distribution<int> cls{0, 2}, coarse{0, 9};
  examples e;
  for (size_t i = 0; i < n; ++i) {
    if (kind == metric_kind::accuracy) {
      e.p.push_back(cls(rng));
      e.y.push_back(cls(rng));
    } else {
      // Coarse scores for the AUCs, so that ties occur within and across batches.
      auto p = kind == metric_kind::auc_roc || kind == metric_kind::auc_pr ? coarse(rng) / 10.0
                                                                           : unit(rng);
      e.p.push_back(p);
      e.y.push_back(unit(rng) < p ? 1 : 0);
    }
    e.w.push_back(i % 3 == 0 ? 0.5 : 1.0 + (i % 5));
  }
  return e;
}

constexpr metric_kind all_kinds[] = {
  metric_kind::mean,    metric_kind::accuracy, metric_kind::precision, metric_kind::recall,
  metric_kind::auc_roc, metric_kind::auc_pr,   metric_kind::log_loss,  metric_kind::mse};

TEST(streaming_metric, batches_folded_one_by_one_equal_the_one_shot_metric) {
  std::mt19937_64 rng{5};
  for (auto kind : all_kinds) {
    auto e = random_examples(kind, 300, rng);
    auto m = streaming_metric::make(kind, 0.4);
    ASSERT_TRUE(m);
    for (size_t begin = 0, size = 1; begin < e.p.size(); begin += size, size = size * 2 + 1) {
      auto n = std::min(size, e.p.size() - begin);
      ASSERT_FALSE(
        m->update({{e.p.data() + begin, n}, {e.y.data() + begin, n}, {e.w.data() + begin, n}}));
    }
    EXPECT_NEAR(m->value(), one_shot(kind, e, 0.4), 1e-12) << to_string(kind);
  }
}

TEST(streaming_metric, merged_replicas_equal_one_metric_over_both) {
  std::mt19937_64 rng{6};
  for (auto kind : all_kinds) {
    auto e = random_examples(kind, 120, rng);
    auto whole = *streaming_metric::make(kind);
    auto first = *streaming_metric::make(kind), second = *streaming_metric::make(kind);
    ASSERT_FALSE(whole.update({e.p, e.y, e.w}));
    ASSERT_FALSE(first.update({{e.p.data(), 50}, {e.y.data(), 50}, {e.w.data(), 50}}));
    ASSERT_FALSE(
      second.update({{e.p.data() + 50, 70}, {e.y.data() + 50, 70}, {e.w.data() + 50, 70}}));
    ASSERT_FALSE(first.merge(second));
    EXPECT_NEAR(first.value(), whole.value(), 1e-12) << to_string(kind);
  }
}

TEST(streaming_metric, hand_computed_values) {
  std::vector<double> scores{0.1, 0.4, 0.35, 0.8}, labels{0, 0, 1, 1};
  struct {
    metric_kind kind;
    std::vector<double> p, y;
    double expected;
  } cases[] = {
    {metric_kind::auc_roc, scores, labels, 0.75},
    {metric_kind::auc_pr, scores, labels, (1.0 + 2.0 / 3.0) / 2},
    {metric_kind::auc_roc, {0.5, 0.5}, {1, 0}, 0.5},
    {metric_kind::precision, scores, labels, 2.0 / 3.0}, // > 0.3: 0.4, 0.35 and 0.8
    {metric_kind::recall, scores, labels, 1.0},
    {metric_kind::accuracy, {1, 2, 0, 2}, {1, 2, 2, 0}, 0.5},
    {metric_kind::mse, {1, 3}, {2, 1}, 2.5},
    {metric_kind::log_loss, {0.5, 0.5}, {1, 0}, std::log(2.0)},
    {metric_kind::mean, {1, 2, 6}, {}, 3.0},
  };
  for (auto& c : cases) {
    auto m = streaming_metric::make(c.kind, 0.3);
    ASSERT_TRUE(m);
    ASSERT_FALSE(m->update({c.p, c.y}));
    EXPECT_NEAR(m->value(), c.expected, 1e-12) << to_string(c.kind);
  }
}

TEST(streaming_metric, undefined_values_are_nan_until_there_is_data_and_reset_forgets) {
  for (auto kind : all_kinds) {
    auto m = *streaming_metric::make(kind);
    EXPECT_TRUE(std::isnan(m.value())) << to_string(kind);
    std::vector<double> p{1}, y{1};
    ASSERT_FALSE(m.update({p, y}));
    m.reset();
    EXPECT_TRUE(std::isnan(m.value())) << to_string(kind);
  }
  auto auc = *streaming_metric::make(metric_kind::auc_roc);
  std::vector<double> p{0.2, 0.9}, only_positives{1, 1};
  ASSERT_FALSE(auc.update({p, only_positives}));
  EXPECT_TRUE(std::isnan(auc.value())) << "no negative: the AUC is undefined";
}

TEST(streaming_metric, bad_batches_are_refused_and_change_nothing) {
  std::vector<double> two{0.2, 0.7}, one{1}, labels{0, 1}, bad_label{0, 2}, nan_p{0.2, NAN},
    negative_weight{1, -1};
  struct {
    const char* what;
    metric_kind kind;
    metric_batch batch;
  } cases[] = {
    {"fewer labels", metric_kind::mse, {two, one}},
    {"fewer weights", metric_kind::mse, {two, labels, one}},
    {"a NaN prediction", metric_kind::mean, {nan_p, labels}},
    {"a negative weight", metric_kind::accuracy, {two, labels, negative_weight}},
    {"a label of 2 for the AUC", metric_kind::auc_roc, {two, bad_label}},
    {"a label of 2 for log loss", metric_kind::log_loss, {two, bad_label}},
  };
  for (auto& c : cases) {
    auto m = *streaming_metric::make(c.kind);
    ASSERT_FALSE(m.update({two, labels}));
    auto before = m.value();
    auto err = m.update(c.batch);
    EXPECT_TRUE(is(err, errc::invalid_argument)) << c.what;
    EXPECT_EQ(m.value(), before) << c.what;
  }
  auto auc = *streaming_metric::make(metric_kind::auc_roc);
  EXPECT_TRUE(is(auc.merge(*streaming_metric::make(metric_kind::auc_pr)), errc::invalid_argument));
  EXPECT_TRUE(
    is(streaming_metric::make(metric_kind::recall, INFINITY).error(), errc::invalid_config));
}

} // namespace
} // namespace darcy::compute::estimator
