// Behaviour of the layers beyond their gradients (tests/compute/nn/gradient_check_test.cpp):
// what dropout keeps, what layer norm produces, what the losses are worth.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "compute/nn/dropout.hpp"
#include "compute/nn/init.hpp"
#include "compute/nn/layer_norm.hpp"
#include "compute/nn/sampled_softmax.hpp"
#include "compute/nn/softmax_cross_entropy.hpp"

namespace darcy::compute::nn {
namespace {

TEST(nn_dropout, keeps_one_minus_rate_scaled_up_and_is_the_identity_in_inference) {
  dropout<float> drop{0.25, 3};
  matrix x = matrix::Ones(200, 100);
  matrix y = drop.forward(x);
  auto kept = (y.array() > 0).count();
  EXPECT_NEAR(static_cast<double>(kept) / x.size(), 0.75, 0.01);
  EXPECT_FLOAT_EQ(y.maxCoeff(), 1.0f / 0.75f);
  EXPECT_EQ(drop.forward(x), y) << "one step, one mask";
  drop.set_step(1);
  EXPECT_NE(drop.forward(x), y) << "the next step draws a new mask";
  drop.set_training(false);
  EXPECT_EQ(drop.forward(x), x);
}

TEST(nn_layer_norm, rows_come_out_with_mean_zero_and_unit_variance) {
  std::mt19937_64 rng{1};
  layer_norm<double> norm{16};
  matrix_t<double> x = normal<double>(5, 16, 3.0, rng).array() + 7.0;
  auto y = norm.forward(x);
  for (Eigen::Index r = 0; r < y.rows(); ++r) {
    EXPECT_NEAR(y.row(r).mean(), 0.0, 1e-12);
    EXPECT_NEAR(y.row(r).squaredNorm() / 16, 1.0, 1e-4);
  }
}

TEST(nn_softmax_cross_entropy,
     uniform_logits_cost_log_of_the_classes_and_extreme_ones_stay_finite) {
  softmax_cross_entropy<float> ce;
  std::vector<uint32_t> labels = {3, 0};
  EXPECT_NEAR(ce.forward(matrix::Zero(2, 50), labels), std::log(50.0f), 1e-5);
  matrix extreme = matrix::Zero(2, 50);
  extreme(0, 3) = 1000;
  extreme(1, 1) = 1000;
  auto loss = ce.forward(extreme, labels);
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(loss, 500.0f, 1e-3) << "row 0 costs 0, row 1 costs 1000";
}

TEST(nn_sampled_softmax, candidates_hold_each_label_once_and_no_label_among_the_draws) {
  std::vector<double> weights(100, 1.0);
  auto dist = candidate_distribution::from_weights(weights);
  ASSERT_TRUE(dist);
  std::mt19937_64 rng{2};
  std::vector<uint64_t> labels = {5, 7, 5, 99};
  auto c = draw_candidates(*dist, labels, 20, rng);
  ASSERT_TRUE(c) << render(c.error());
  ASSERT_EQ(c->label_index.size(), 4u);
  EXPECT_EQ(c->label_index[0], c->label_index[2]);
  for (size_t i = 0; i < labels.size(); ++i)
    EXPECT_EQ(c->rows[c->label_index[i]], labels[i]);
  ASSERT_EQ(c->sampled_index.size(), 20u);
  for (auto j : c->sampled_index) {
    auto id = c->rows[j];
    EXPECT_TRUE(id != 5 && id != 7 && id != 99) << id;
  }
  EXPECT_EQ(c->log_q.size(), c->rows.size());
  EXPECT_NEAR(c->log_q[0], std::log(20 * 0.01), 1e-12);
}

TEST(nn_sampled_softmax, other_labels_are_negatives_and_an_own_label_draw_is_masked) {
  auto dist = candidate_distribution::from_weights({1.0, 1.0, 1.0});
  ASSERT_TRUE(dist);
  std::mt19937_64 rng{4};
  std::vector<uint64_t> labels = {0, 1};
  auto c = draw_candidates(*dist, labels, 30, rng, negative_draw::remove_accidental_hits);
  ASSERT_TRUE(c) << render(c.error());
  ASSERT_EQ(c->sampled_index.size(), 30u);
  // Example 0's softmax: its label, then every draw but those of row 0 (its own label).
  matrix h{{1.0f, 0.5f}, {-0.5f, 2.0f}};
  matrix w{{0.3f, -0.2f}, {0.1f, 0.4f}, {-0.6f, 0.2f}};
  matrix rows(c->rows.size(), 2);
  matrix bias = matrix::Zero(1, c->rows.size());
  for (size_t r = 0; r < c->rows.size(); ++r)
    rows.row(r) = w.row(c->rows[r]);
  double expected = 0;
  size_t hits = 0;
  for (Eigen::Index i = 0; i < 2; ++i) {
    auto own = c->label_index[i];
    double label_logit = h.row(i).dot(rows.row(own)) - c->log_q[own];
    double sum = std::exp(label_logit);
    for (auto j : c->sampled_index) {
      if (j == own) {
        ++hits;
        continue;
      }
      sum += std::exp(h.row(i).dot(rows.row(j)) - c->log_q[j]);
    }
    expected += (std::log(sum) - label_logit) / 2;
  }
  EXPECT_GT(hits, 0u) << "the draws never hit a label: the masking went untested";
  sampled_softmax<float> loss;
  EXPECT_NEAR(loss.forward(h, rows, bias, *c), expected, 1e-4);
}

TEST(nn_sampled_softmax, bad_draws_are_refused) {
  auto dist = candidate_distribution::from_weights({1.0, 1.0});
  ASSERT_TRUE(dist);
  std::mt19937_64 rng{3};
  std::vector<uint64_t> in_range = {0};
  std::vector<uint64_t> out_of_range = {2};
  std::vector<uint64_t> everything = {0, 1};
  EXPECT_TRUE(is(draw_candidates(*dist, in_range, 0, rng).error(), errc::invalid_argument));
  EXPECT_TRUE(is(draw_candidates(*dist, out_of_range, 4, rng).error(), errc::invalid_argument));
  EXPECT_TRUE(is(draw_candidates(*dist, everything, 4, rng).error(), errc::invalid_argument));
  EXPECT_TRUE(
    is(draw_candidates(*dist, out_of_range, 4, rng, negative_draw::remove_accidental_hits).error(),
       errc::invalid_argument));
}

} // namespace
} // namespace darcy::compute::nn
