#include "compute/word2vec.hpp"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace darcy::compute {
namespace {

// word2vec.c's skip-gram negative-sampling step, written out scalar by scalar.
void reference_step(std::vector<float>& in, std::vector<float>& out, size_t dim,
                    const uint32_t* pair, uint32_t negative, float alpha,
                    const sigmoid_table& sigmoid) {
  std::vector<float> neu1e(dim, 0.0f);
  float* l1 = in.data() + pair[0] * dim;
  for (uint32_t k = 0; k <= negative; ++k) {
    if (pair[k + 1] == skipped_slot)
      continue;
    float* l2 = out.data() + pair[k + 1] * dim;
    float label = k == 0 ? 1.0f : 0.0f;
    float f = 0;
    for (size_t c = 0; c < dim; ++c)
      f += l1[c] * l2[c];
    float g = f > 6 ? (label - 1) * alpha : f < -6 ? label * alpha : (label - sigmoid(f)) * alpha;
    for (size_t c = 0; c < dim; ++c)
      neu1e[c] += g * l2[c];
    for (size_t c = 0; c < dim; ++c)
      l2[c] += g * l1[c];
  }
  for (size_t c = 0; c < dim; ++c)
    l1[c] += neu1e[c];
}

TEST(word2vec_kernel, train_sgns_matches_the_scalar_word2vec_rule) {
  const size_t dim = 37, slots = 20;
  const uint32_t negative = 4;
  std::mt19937_64 rng{3};
  std::uniform_real_distribution<float> u{-0.5f, 0.5f};
  std::vector<float> in(slots * dim), out(slots * dim);
  for (auto& x : in)
    x = u(rng);
  for (auto& x : out)
    x = u(rng) * 4; // some dot products leave [-6, 6]
  sgns_plan plan{negative, {}};
  for (int p = 0; p < 200; ++p) {
    plan.entries.push_back(static_cast<uint32_t>(rng() % slots));
    for (uint32_t k = 0; k <= negative; ++k)
      plan.entries.push_back(k == 2 && p % 7 == 0 ? skipped_slot
                                                  : static_cast<uint32_t>(rng() % slots));
  }
  auto ref_in = in, ref_out = out;
  sigmoid_table sigmoid;
  for (size_t p = 0; p < plan.pairs(); ++p)
    reference_step(ref_in, ref_out, dim, plan.entries.data() + p * (negative + 2), negative, 0.025f,
                   sigmoid);
  EXPECT_EQ(train_sgns(plan, 0.025f, in, out, dim, sigmoid), 200u);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_NEAR(in[i], ref_in[i], 1e-4f) << i;
    EXPECT_NEAR(out[i], ref_out[i], 1e-4f) << i;
  }
}

TEST(word2vec_kernel, subsampling_and_learning_rate_follow_word2vec) {
  EXPECT_FLOAT_EQ(keep_probability(10, 1000, 0), 1.0f);
  EXPECT_FLOAT_EQ(keep_probability(1, 1000000, 1e-3), 1.0f);
  // A word making up 10% of the corpus with sample 1e-3: (sqrt(0.01) + 0.01) ~ 0.11.
  EXPECT_NEAR(keep_probability(100000, 1000000, 1e-3), std::sqrt(0.01) + 0.01, 1e-6);
  EXPECT_FLOAT_EQ(decayed_alpha(0.025f, 0, 100), 0.025f);
  EXPECT_NEAR(decayed_alpha(0.025f, 50, 99), 0.0125f, 1e-6f);
  EXPECT_FLOAT_EQ(decayed_alpha(0.025f, 100, 99), 0.025f * 1e-4f);
}

} // namespace
} // namespace darcy::compute
