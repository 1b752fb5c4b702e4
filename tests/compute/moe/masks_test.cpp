#include "compute/moe/masks.hpp"

#include <random>

#include <gtest/gtest.h>

#include "compute/nn/init.hpp"
#include "compute/nn/softmax_cross_entropy.hpp"

namespace darcy::compute::moe {
namespace {

using mat = matrix_t<double>;

mat rows(std::initializer_list<std::initializer_list<double>> values) {
  mat m(values.size(), values.begin()->size());
  Eigen::Index r = 0;
  for (auto& row : values) {
    Eigen::Index c = 0;
    for (auto v : row)
      m(r, c++) = v;
    ++r;
  }
  return m;
}

TEST(moe_masks, top_k_keeps_the_k_largest_of_each_row_ties_to_the_lower_expert) {
  auto values = rows({{0.1, 0.5, 0.3, 0.5}, {2.0, -1.0, 0.0, 1.0}});
  EXPECT_EQ(top_k_mask<double>(values, 2), rows({{0, 1, 0, 1}, {1, 0, 0, 1}}));
  EXPECT_EQ(top_k_mask<double>(values, 1), rows({{0, 1, 0, 0}, {1, 0, 0, 0}}));
  EXPECT_EQ(top_k_mask<double>(values, 4), mat::Ones(2, 4));
}

TEST(moe_masks, the_batchwise_mask_gives_every_expert_exactly_m_examples) {
  std::mt19937_64 rng{1};
  struct {
    uint32_t k, batch, experts;
  } cases[] = {{1, 64, 8}, {4, 100, 16}, {2, 7, 4}, {4, 3, 64}};
  for (auto& c : cases) {
    mat gates = nn::softmax_rows<double>(nn::normal<double>(c.batch, c.experts, 2.0, rng));
    auto m = batchwise_m(c.k, c.batch, c.experts);
    auto mask = batchwise_mask<double>(gates, m);
    for (Eigen::Index e = 0; e < mask.cols(); ++e)
      EXPECT_EQ(mask.col(e).sum(), m) << "expert " << e << " of " << c.experts;
    EXPECT_EQ(mask.sum(), static_cast<double>(m) * c.experts);
    EXPECT_GE(m, 1u);
    EXPECT_LE(m, c.batch);
  }
  EXPECT_EQ(batchwise_m(4, 8192, 64), 512u) << "k·|X|/n";
}

TEST(moe_masks, balance_loss_matches_the_hand_computed_value) {
  // Means per expert: 0.25, 0.75, 0; minus 1/3: −1/12, 5/12, −1/3.
  auto l = balance_loss<double>(rows({{0.5, 0.5, 0}, {0, 1, 0}}));
  EXPECT_NEAR(l.value, 0.5 * (1.0 / 144 + 25.0 / 144 + 16.0 / 144), 1e-12);
  EXPECT_NEAR(l.grad(0, 0), -1.0 / 24, 1e-12);
  EXPECT_NEAR(l.grad(1, 1), 5.0 / 24, 1e-12);
  EXPECT_NEAR(l.grad(1, 2), -1.0 / 6, 1e-12);
  EXPECT_NEAR(balance_loss<double>(mat::Constant(5, 4, 0.25)).value, 0.0, 1e-15);
}

TEST(moe_masks, cv_squared_matches_the_hand_computed_value) {
  // mean 2, variance 2/3: CV² = 1/6; d/dv_i = 2(v_i − 2)/12 − 2·(2/3)/(3·8).
  auto l = cv_squared<double>(rows({{1, 2, 3}}));
  EXPECT_NEAR(l.value, 1.0 / 6, 1e-12);
  EXPECT_NEAR(l.grad(0, 0), -1.0 / 6 - 1.0 / 18, 1e-12);
  EXPECT_NEAR(l.grad(0, 1), -1.0 / 18, 1e-12);
  EXPECT_NEAR(l.grad(0, 2), 1.0 / 6 - 1.0 / 18, 1e-12);
  EXPECT_EQ(cv_squared<double>(mat::Zero(1, 3)).value, 0.0);
  EXPECT_NEAR(cv_squared<double>(mat::Constant(1, 3, 5.0)).value, 0.0, 1e-15);
}

TEST(moe_masks, batchwise_threshold_loss_matches_the_hand_computed_value) {
  auto values = rows({{0.6, 0.1}, {0.3, 0.7}, {0.2, 0.4}});
  auto batchwise = batchwise_mask<double>(values, 1);
  ASSERT_EQ(batchwise, rows({{1, 0}, {0, 1}, {0, 0}}));
  // Thresholds 0.25 and 0.5 also keep (row 1, expert 0): one disagreement of margin 0.05.
  auto l = batchwise_threshold_loss<double>(values, rows({{0.25, 0.5}}), batchwise);
  EXPECT_NEAR(l.value, 0.05 / 3, 1e-12);
  EXPECT_NEAR(l.grad(0, 0), -1.0 / 3, 1e-12);
  EXPECT_NEAR(l.grad(0, 1), 0.0, 1e-12);
}

TEST(moe_masks, thresholds_between_the_kept_and_the_dropped_equal_the_batchwise_mask) {
  auto values = rows({{0.9, 0.1}, {0.2, 0.8}, {0.6, 0.3}, {0.1, 0.7}});
  auto batchwise = batchwise_mask<double>(values, 2);
  auto thresholds = rows({{0.4, 0.5}});
  EXPECT_EQ(threshold_mask<double>(values, thresholds), batchwise);
  EXPECT_EQ(mask_agreement<double>(threshold_mask<double>(values, thresholds), batchwise), 1.0);
  auto l = batchwise_threshold_loss<double>(values, thresholds, batchwise);
  EXPECT_EQ(l.value, 0.0);
  EXPECT_TRUE(l.grad.isZero());
}

TEST(moe_masks, thresholds_trained_on_l_batchwise_agree_with_the_batchwise_mask_on_new_batches) {
  std::mt19937_64 rng{3};
  mat skew = nn::normal<double>(1, 8, 1.0, rng); // experts differ in how popular they are
  auto batch = [&] {
    mat logits = nn::normal<double>(256, 8, 1.0, rng);
    logits.rowwise() += skew.row(0);
    return mat{nn::softmax_rows<double>(logits)};
  };
  mat thresholds = mat::Zero(1, 8);
  auto held_out = batch();
  auto held_out_mask = batchwise_mask<double>(held_out, batchwise_m(2, 256, 8));
  auto before = mask_agreement<double>(threshold_mask<double>(held_out, thresholds), held_out_mask);
  for (int step = 0; step < 300; ++step) {
    auto x = batch();
    auto l = batchwise_threshold_loss<double>(x, thresholds,
                                              batchwise_mask<double>(x, batchwise_m(2, 256, 8)));
    thresholds -= 0.002 * l.grad;
  }
  auto after = mask_agreement<double>(threshold_mask<double>(held_out, thresholds), held_out_mask);
  EXPECT_LT(before, 0.3);
  EXPECT_GT(after, 0.9) << "before training: " << before;
}

} // namespace
} // namespace darcy::compute::moe
