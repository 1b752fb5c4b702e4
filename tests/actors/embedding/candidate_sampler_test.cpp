#include "actors/embedding/candidate_sampler.hpp"

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

class candidate_sampler_test : public test::system_fixture {
protected:
  void SetUp() override {
    embedding_master_options opts;
    opts.shards = spawn_shards(sys, 4);
    master = sys.spawn(embedding_master, opts);
    sampler = sys.spawn(candidate_sampler, candidate_sampler_options{opts.shards});
    de_config cfg;
    cfg.name = "vocab";
    cfg.dim = 2;
    ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, cfg));
    // Key i is looked up i + 1 times: frequencies 1..40, all distinct.
    for (int round = 0; round < keys; ++round) {
      strings batch;
      for (int i = round; i < keys; ++i)
        batch.push_back("k" + std::to_string(i));
      ASSERT_TRUE(ask<std::vector<float>>(sys, master, test::patience, lookup_atom::value,
                                          std::string{"vocab"}, batch));
    }
  }

  caf::expected<sample_result> sample(const strings& positives, uint32_t n, sampler_kind kind,
                                      uint64_t seed = 1, std::string name = "vocab") {
    return ask<sample_result>(sys, sampler, test::patience, sample_atom::value, name, positives, n,
                              kind, seed);
  }

  embedding_master_actor master;
  candidate_sampler_actor sampler;
};

struct kind_case {
  const char* name;
  sampler_kind kind;
};

class sampler_kinds : public candidate_sampler_test,
                      public ::testing::WithParamInterface<kind_case> {};

TEST_P(sampler_kinds, SharedOutSamplesFollowOneGlobalDistribution) {
  auto kind = GetParam().kind;
  std::vector<uint64_t> freqs;
  for (int i = 0; i < keys; ++i)
    freqs.push_back(static_cast<uint64_t>(i + 1));
  auto reference = compute::candidate_distribution::make(kind, freqs);
  ASSERT_TRUE(reference);
  strings positives{"k3", "k7", "k11", "k7"};
  const uint32_t n = 100000;
  auto result = sample(positives, n, kind);
  ASSERT_TRUE(result) << render(error_of(result));
  ASSERT_EQ(result->keys.size(), 3u + n) << "duplicate positives are reported once";
  std::map<std::string, int> counts;
  for (size_t i = 0; i < result->keys.size(); ++i) {
    auto id = std::stoi(result->keys[i].substr(1));
    EXPECT_NEAR(result->probs[i], reference->prob(static_cast<uint64_t>(id)), 1e-12)
      << result->keys[i];
    if (i < 3) {
      EXPECT_EQ(result->is_positive[i], 1);
      continue;
    }
    EXPECT_EQ(result->is_positive[i], 0);
    ASSERT_TRUE(id != 3 && id != 7 && id != 11) << "a positive was drawn as a negative";
    ++counts[result->keys[i]];
  }
  double free_mass = 1.0 - reference->prob(3) - reference->prob(7) - reference->prob(11);
  double chi2 = 0;
  for (int id = 0; id < keys; ++id) {
    if (id == 3 || id == 7 || id == 11)
      continue;
    double expected = n * reference->prob(static_cast<uint64_t>(id)) / free_mass;
    double observed = counts["k" + std::to_string(id)];
    chi2 += (observed - expected) * (observed - expected) / expected;
  }
  EXPECT_LT(chi2, chi2_critical_36) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(kinds, sampler_kinds,
                         ::testing::Values(kind_case{"uniform", sampler_kind::uniform},
                                           kind_case{"log_uniform", sampler_kind::log_uniform},
                                           kind_case{"unigram", sampler_kind::unigram}),
                         [](const auto& info) { return std::string{info.param.name}; });

TEST_F(candidate_sampler_test, SeededAndSafeOnOddRequests) {
  auto a = sample({"k1"}, 200, sampler_kind::unigram, 9);
  auto b = sample({"k1"}, 200, sampler_kind::unigram, 9);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->keys, b->keys);
  auto absent = sample({"never-seen"}, 5, sampler_kind::uniform);
  ASSERT_TRUE(absent);
  EXPECT_EQ(absent->probs[0], absent_positive_prob);
  EXPECT_TRUE(
    is(error_of(sample({"k1"}, 5, sampler_kind::uniform, 1, "nope")), errc::unknown_embedding));
  strings everything;
  for (int i = 0; i < keys; ++i)
    everything.push_back("k" + std::to_string(i));
  EXPECT_TRUE(is(error_of(sample(everything, 1, sampler_kind::uniform)), errc::invalid_argument));
  auto none = sample(everything, 0, sampler_kind::uniform);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->keys.size(), everything.size());
}

} // namespace
} // namespace darcy::actors
