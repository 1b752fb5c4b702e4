#include "actors/embedding/candidate_sampler.hpp"

#include <cmath>
#include <functional>
#include <map>

#include "actors/embedding/embedding_master.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "compute/sampler.hpp"
#include "runtime/ask.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using runtime::ask;
using strings = std::vector<std::string>;

// Chi-square critical value for 36 degrees of freedom at p = 0.001.
constexpr double chi2_critical_36 = 67.99;
constexpr int keys = 40;

constexpr const char* table_names[] = {"uniform", "log_uniform", "unigram"};

class candidate_sampler_test : public test::system_fixture {
protected:
  void SetUp() override {
    embedding_master_options opts;
    opts.shards = spawn_shards(sys, 4);
    master = sys.spawn(embedding_master, opts);
    sampler = sys.spawn(candidate_sampler, candidate_sampler_options{opts.shards});
    // One table per strategy, named after it; key i is looked up i + 1 times in each:
    // frequencies 1..40, all distinct.
    for (auto kind : {sampler_kind::uniform, sampler_kind::log_uniform, sampler_kind::unigram}) {
      de_config cfg;
      cfg.name = table_names[static_cast<int>(kind)];
      cfg.dim = 2;
      cfg.sampler.kind = kind;
      ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, cfg));
      for (int round = 0; round < keys; ++round) {
        strings batch;
        for (int i = round; i < keys; ++i)
          batch.push_back("k" + std::to_string(i));
        ASSERT_TRUE(ask<std::vector<float>>(sys, master, test::patience, lookup_atom::value,
                                            cfg.name, batch));
      }
    }
  }

  caf::expected<sample_result> sample(const strings& positives, uint32_t n,
                                      std::string name = "unigram", uint64_t seed = 1) {
    return ask<sample_result>(sys, sampler, test::patience, sample_atom::value, name, positives, n,
                              seed);
  }

  embedding_master_actor master;
  candidate_sampler_actor sampler;
};

/// Each strategy's probability of key i (frequency i + 1), written from its definition.
std::vector<double> reference(sampler_kind kind) {
  std::vector<double> w(keys);
  for (int i = 0; i < keys; ++i)
    w[i] = kind == sampler_kind::unigram ? std::pow(i + 1.0, 0.75) : 1.0;
  if (kind == sampler_kind::log_uniform) {
    // Ranks by frequency class, the most frequent first; a class shares its ranks' mean.
    std::map<uint32_t, int, std::greater<>> per_class;
    for (int i = 0; i < keys; ++i)
      ++per_class[compute::frequency_class(i + 1u)];
    std::map<uint32_t, double> class_weight;
    double rank = 0;
    for (auto [c, count] : per_class) {
      double sum = 0;
      for (int r = 0; r < count; ++r, ++rank)
        sum += std::log((rank + 2) / (rank + 1));
      class_weight[c] = sum / count;
    }
    for (int i = 0; i < keys; ++i)
      w[i] = class_weight[compute::frequency_class(i + 1u)];
  }
  double total = 0;
  for (auto x : w)
    total += x;
  for (auto& x : w)
    x /= total;
  return w;
}

class sampler_kinds : public candidate_sampler_test,
                      public ::testing::WithParamInterface<sampler_kind> {};

TEST_P(sampler_kinds, SharedOutSamplesFollowTheTablesStrategyOverAllShards) {
  auto kind = GetParam();
  auto prob = reference(kind);
  strings positives{"k3", "k7", "k11", "k7"};
  const uint32_t n = 100000;
  auto result = sample(positives, n, table_names[static_cast<int>(kind)]);
  ASSERT_TRUE(result) << render(error_of(result));
  ASSERT_EQ(result->keys.size(), 3u + n) << "duplicate positives are reported once";
  std::map<std::string, int> counts;
  for (size_t i = 0; i < result->keys.size(); ++i) {
    auto id = std::stoi(result->keys[i].substr(1));
    EXPECT_NEAR(result->probs[i], prob[static_cast<size_t>(id)], 1e-12) << result->keys[i];
    if (i < 3) {
      EXPECT_EQ(result->is_positive[i], 1);
      continue;
    }
    EXPECT_EQ(result->is_positive[i], 0);
    ASSERT_TRUE(id != 3 && id != 7 && id != 11) << "a positive was drawn as a negative";
    ++counts[result->keys[i]];
  }
  double free_mass = 1.0 - prob[3] - prob[7] - prob[11];
  double chi2 = 0;
  for (int id = 0; id < keys; ++id) {
    if (id == 3 || id == 7 || id == 11)
      continue;
    double expected = n * prob[static_cast<size_t>(id)] / free_mass;
    double observed = counts["k" + std::to_string(id)];
    chi2 += (observed - expected) * (observed - expected) / expected;
  }
  EXPECT_LT(chi2, chi2_critical_36) << table_names[static_cast<int>(kind)];
}

INSTANTIATE_TEST_SUITE_P(kinds, sampler_kinds,
                         ::testing::Values(sampler_kind::uniform, sampler_kind::log_uniform,
                                           sampler_kind::unigram),
                         [](const auto& info) {
                           return std::string{table_names[static_cast<int>(info.param)]};
                         });

TEST_F(candidate_sampler_test, ALookupCountsEachOccurrenceOfAKeyInItsBatch) {
  de_config cfg;
  cfg.name = "repeats";
  cfg.dim = 2;
  ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, cfg));
  ASSERT_TRUE(ask<std::vector<float>>(sys, master, test::patience, lookup_atom::value, cfg.name,
                                      strings{"x", "y", "x", "x", "z"}));
  auto result = sample({"x", "y"}, 1, "repeats");
  ASSERT_TRUE(result) << render(error_of(result));
  auto x = std::pow(3.0, 0.75);
  EXPECT_NEAR(result->probs[0], x / (x + 2), 1e-12);
  EXPECT_NEAR(result->probs[1], 1 / (x + 2), 1e-12);
}

TEST_F(candidate_sampler_test, SeededAndSafeOnOddRequests) {
  auto a = sample({"k1"}, 200, "unigram", 9);
  auto b = sample({"k1"}, 200, "unigram", 9);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->keys, b->keys);
  auto absent = sample({"never-seen"}, 5, "uniform");
  ASSERT_TRUE(absent);
  EXPECT_EQ(absent->probs[0], absent_positive_prob);
  EXPECT_TRUE(is(error_of(sample({"k1"}, 5, "nope")), errc::unknown_embedding));
  strings everything;
  for (int i = 0; i < keys; ++i)
    everything.push_back("k" + std::to_string(i));
  EXPECT_TRUE(is(error_of(sample(everything, 1, "uniform")), errc::invalid_argument));
  auto none = sample(everything, 0, "uniform");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->keys.size(), everything.size());
  EXPECT_EQ(none->rows, static_cast<uint64_t>(keys));
}

} // namespace
} // namespace darcy::actors
