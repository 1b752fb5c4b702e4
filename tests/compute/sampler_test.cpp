#include "compute/sampler.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "messages/errc.hpp"

namespace darcy::compute {
namespace {

// Chi-square critical value for 49 degrees of freedom at p = 0.001.
constexpr double chi2_critical_49 = 85.35;

struct distribution_case {
  const char* name;
  sampler_kind kind;
};

class sampler_distribution : public ::testing::TestWithParam<distribution_case> {};

TEST_P(sampler_distribution, EmpiricalFrequenciesMatchTheRequestedDistribution) {
  std::vector<uint64_t> freq(50);
  for (size_t i = 0; i < freq.size(); ++i)
    freq[i] = (i * 37) % 101 + 1;
  auto dist = candidate_distribution::make(GetParam().kind, freq);
  ASSERT_TRUE(dist) << render(dist.error());
  double total = 0;
  for (size_t i = 0; i < freq.size(); ++i)
    total += dist->prob(i);
  EXPECT_NEAR(total, 1.0, 1e-12);
  // Closed-form probabilities of each strategy.
  for (size_t i = 0; i < freq.size(); ++i) {
    if (GetParam().kind == sampler_kind::uniform) {
      EXPECT_NEAR(dist->prob(i), 1.0 / 50, 1e-12);
    } else if (GetParam().kind == sampler_kind::unigram) {
      double z = 0;
      for (auto f : freq)
        z += std::pow(f, 0.75);
      EXPECT_NEAR(dist->prob(i), std::pow(freq[i], 0.75) / z, 1e-12);
    }
  }
  std::mt19937_64 rng{12345};
  const int draws = 200000;
  std::vector<int> counts(freq.size());
  for (int d = 0; d < draws; ++d)
    ++counts[dist->draw(rng)];
  double chi2 = 0;
  for (size_t i = 0; i < freq.size(); ++i) {
    double expected = draws * dist->prob(i);
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  EXPECT_LT(chi2, chi2_critical_49) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(kinds, sampler_distribution,
                         ::testing::Values(distribution_case{"uniform", sampler_kind::uniform},
                                           distribution_case{"log_uniform",
                                                             sampler_kind::log_uniform},
                                           distribution_case{"unigram", sampler_kind::unigram}),
                         [](const auto& info) { return std::string{info.param.name}; });

TEST(sampler, LogUniformFollowsFrequencyRank) {
  std::vector<uint64_t> freq{5, 100, 50};
  auto dist = candidate_distribution::make(sampler_kind::log_uniform, freq);
  ASSERT_TRUE(dist);
  // Ranks: id 1 (rank 0), id 2 (rank 1), id 0 (rank 2); P(r) = log((r+2)/(r+1)) / log(4).
  EXPECT_NEAR(dist->prob(1), std::log(2.0) / std::log(4.0), 1e-12);
  EXPECT_NEAR(dist->prob(2), std::log(1.5) / std::log(4.0), 1e-12);
  EXPECT_NEAR(dist->prob(0), std::log(4.0 / 3.0) / std::log(4.0), 1e-12);
}

TEST(sampler, FrequencyClassesAreExactBelowEightThenQuarterOctaves) {
  struct row {
    uint64_t frequency;
    uint32_t cls;
  };
  for (auto r : {row{0, 0}, row{7, 7}, row{8, 8}, row{9, 8}, row{10, 9}, row{15, 11}, row{16, 12},
                 row{19, 12}, row{20, 13}, row{31, 15}, row{32, 16},
                 row{UINT64_MAX, frequency_class_count - 1}})
    EXPECT_EQ(frequency_class(r.frequency), r.cls) << r.frequency;
  // Every class covers [floor, ceiling], and the classes tile the frequencies.
  for (uint32_t c = 0; c < frequency_class_count; ++c) {
    EXPECT_EQ(frequency_class(class_floor(c)), c) << c;
    EXPECT_EQ(frequency_class(class_ceiling(c)), c) << c;
    if (c + 1 < frequency_class_count) {
      EXPECT_EQ(class_ceiling(c) + 1, class_floor(c + 1)) << c;
    }
  }
  EXPECT_EQ(class_ceiling(frequency_class_count - 1), UINT64_MAX);
}

TEST(sampler, RowWeightsOfEachStrategy) {
  // 3 rows of frequency 1, 2 of frequency 9 (class 8), 1 of frequency 100.
  std::vector<uint32_t> classes{1, frequency_class(9), frequency_class(100)};
  std::vector<uint64_t> counts{3, 2, 1};
  row_weights uniform{{sampler_kind::uniform, 0.75}, classes, counts};
  EXPECT_EQ(uniform(100), 1.0);
  row_weights unigram{{sampler_kind::unigram, 0.5}, classes, counts};
  EXPECT_NEAR(unigram(9), 3.0, 1e-12);
  EXPECT_NEAR(unigram.class_bound(frequency_class(9)), std::sqrt(9.0), 1e-12);
  row_weights log_uniform{{sampler_kind::log_uniform, 0.75}, classes, counts};
  // Ranks 0 (frequency 100), 1-2 (frequency 9), 3-5 (frequency 1).
  EXPECT_NEAR(log_uniform(100), std::log(2.0), 1e-12);
  EXPECT_NEAR(log_uniform(9), std::log(4.0 / 2.0) / 2, 1e-12);
  EXPECT_NEAR(log_uniform(1), std::log(7.0 / 4.0) / 3, 1e-12);
  EXPECT_NEAR(log_uniform(100) + 2 * log_uniform(9) + 3 * log_uniform(1), std::log(7.0), 1e-12);
  // A shard's copy from the plan weighs alike.
  row_weights copy{{sampler_kind::log_uniform, 0.75}, log_uniform.class_weights()};
  EXPECT_EQ(copy(9), log_uniform(9));
}

TEST(sampler, PositivesComeFirstAndAreNeverDrawnAsNegatives) {
  std::vector<uint64_t> freq(10, 1);
  freq[3] = 1000;
  auto dist = candidate_distribution::make(sampler_kind::unigram, freq);
  ASSERT_TRUE(dist);
  std::mt19937_64 rng{7};
  std::vector<uint64_t> positives{3, 5};
  for (int trial = 0; trial < 200; ++trial) {
    auto result = sample(*dist, positives, 20, rng);
    ASSERT_TRUE(result);
    ASSERT_EQ(result->size(), 22u);
    EXPECT_TRUE((*result)[0].is_positive && (*result)[0].id == 3);
    EXPECT_TRUE((*result)[1].is_positive && (*result)[1].id == 5);
    EXPECT_NEAR((*result)[0].prob, dist->prob(3), 1e-15);
    for (size_t i = 2; i < result->size(); ++i) {
      EXPECT_FALSE((*result)[i].is_positive);
      EXPECT_NE((*result)[i].id, 3u);
      EXPECT_NE((*result)[i].id, 5u);
      EXPECT_NEAR((*result)[i].prob, dist->prob((*result)[i].id), 1e-15);
    }
  }
}

TEST(sampler, SameSeedDrawsTheSameSamples) {
  std::vector<uint64_t> freq{1, 2, 3, 4, 5};
  auto dist = candidate_distribution::make(sampler_kind::unigram, freq);
  std::mt19937_64 a{99}, b{99};
  std::vector<uint64_t> pos{0};
  auto x = sample(*dist, pos, 50, a);
  auto y = sample(*dist, pos, 50, b);
  ASSERT_TRUE(x && y);
  for (size_t i = 0; i < x->size(); ++i)
    EXPECT_EQ((*x)[i].id, (*y)[i].id);
}

TEST(sampler, BadRequestsAreRefused) {
  std::vector<uint64_t> none;
  EXPECT_TRUE(is(error_of(candidate_distribution::make(sampler_kind::uniform, none)),
                 errc::invalid_argument));
  std::vector<uint64_t> zeros(4, 0);
  EXPECT_TRUE(is(error_of(candidate_distribution::make(sampler_kind::unigram, zeros)),
                 errc::invalid_argument));
  std::vector<uint64_t> freq{1, 1};
  auto dist = candidate_distribution::make(sampler_kind::uniform, freq);
  std::mt19937_64 rng{1};
  std::vector<uint64_t> out_of_range{2};
  EXPECT_TRUE(is(error_of(sample(*dist, out_of_range, 1, rng)), errc::invalid_argument));
  std::vector<uint64_t> all{0, 1};
  EXPECT_TRUE(is(error_of(sample(*dist, all, 1, rng)), errc::invalid_argument));
  EXPECT_TRUE(sample(*dist, all, 0, rng)) << "no negatives asked, none needed";
}

} // namespace
} // namespace darcy::compute
