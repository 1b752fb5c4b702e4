#include "stores/embedding/sample_index.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::stores {
namespace {

using compute::frequency_class;

// Chi-square critical value for 19 degrees of freedom at p = 0.001.
constexpr double chi2_critical_19 = 43.82;

std::string key(int i) {
  return "key-" + std::to_string(i);
}

/// The plan a lone shard gets: the index's own classes and weight.
sample_plan plan_of(const sample_stats& stats, uint32_t count, uint64_t seed,
                    std::vector<std::string> positives = {}) {
  compute::row_weights weights{stats.sampler, stats.classes, stats.counts};
  double total = stats.weight;
  if (stats.sampler.kind == sampler_kind::log_uniform) {
    total = 0;
    for (size_t i = 0; i < stats.classes.size(); ++i)
      total += weights.class_weights()[stats.classes[i]] * static_cast<double>(stats.counts[i]);
  }
  return {stats.sampler, weights.class_weights(), total, count, seed, std::move(positives)};
}

TEST(sample_index, EveryRowStaysInTheClassOfItsFrequency) {
  sample_index index{{sampler_kind::unigram, 0.75}};
  std::map<std::string, uint64_t> truth;
  auto exact = [&](std::string_view k, uint64_t) { return truth.at(std::string{k}); };
  for (int i = 0; i < 200; ++i) {
    truth[key(i)] = 0;
    index.set(key(i), 0, exact);
  }
  // Key i is counted i times (crossing many classes), every third key is removed, and some
  // keys are put again with a new frequency (a restore).
  for (int i = 0; i < 200; ++i)
    for (int n = 0; n < i; ++n)
      index.counted(key(i), truth[key(i)]++);
  for (int i = 0; i < 200; i += 3) {
    index.remove(key(i), exact);
    truth.erase(key(i));
  }
  index.remove("never-there", exact);
  for (int i = 1; i < 200; i += 7) {
    index.set(key(i), 1000 + i, exact);
    truth[key(i)] = 1000 + i;
  }
  std::map<uint32_t, uint64_t> histogram;
  double weight = 0;
  for (auto& [k, f] : truth) {
    ++histogram[frequency_class(f)];
    weight += std::pow(static_cast<double>(f), 0.75);
  }
  auto stats = index.stats({key(1), key(3), key(4)}, exact);
  EXPECT_EQ(index.size(), truth.size());
  std::map<uint32_t, uint64_t> got;
  for (size_t i = 0; i < stats.classes.size(); ++i)
    got[stats.classes[i]] = stats.counts[i];
  EXPECT_EQ(got, histogram);
  EXPECT_NEAR(stats.weight, weight, 1e-9 * weight);
  // key-3 was removed: only the positives held are reported, with their exact frequencies.
  EXPECT_EQ(stats.positives, (std::vector<std::string>{key(1), key(4)}));
  EXPECT_EQ(stats.positive_freqs, (std::vector<uint64_t>{1001, 4}));
}

struct strategy_case {
  const char* name;
  sampler_kind kind;
};

class sample_index_draws : public ::testing::TestWithParam<strategy_case> {};

TEST_P(sample_index_draws, DrawsFollowTheExactWeightsWhileStoredFrequenciesLag) {
  sampler_config cfg{GetParam().kind, 0.75};
  sample_index index{cfg};
  // Rows of frequencies 1..21 as the store counts them; the index's stored frequencies lag
  // within a class, and draws read the exact ones through the reader.
  std::map<std::string, uint64_t> truth;
  auto exact = [&](std::string_view k, uint64_t) { return truth.at(std::string{k}); };
  for (int i = 0; i < 21; ++i) {
    truth[key(i)] = 0;
    index.set(key(i), 0, exact);
    for (uint64_t f = 0; f <= static_cast<uint64_t>(i); ++f)
      index.counted(key(i), f);
    truth[key(i)] = static_cast<uint64_t>(i) + 1;
  }
  auto stats = index.stats({}, exact);
  auto plan = plan_of(stats, 200000, 5, {key(20)});
  auto drawn = index.draw(plan, exact);
  ASSERT_TRUE(drawn) << render(drawn.error());
  ASSERT_EQ(drawn->keys.size(), plan.count);
  compute::row_weights weights{cfg, stats.classes, stats.counts};
  double free_weight = plan.total_weight - weights(21);
  std::map<std::string, int> counts;
  for (size_t i = 0; i < drawn->keys.size(); ++i) {
    ASSERT_NE(drawn->keys[i], key(20)) << "a positive was drawn";
    EXPECT_DOUBLE_EQ(drawn->probs[i], weights(truth[drawn->keys[i]]) / plan.total_weight);
    ++counts[drawn->keys[i]];
  }
  double chi2 = 0;
  for (int i = 0; i < 20; ++i) {
    double expected = plan.count * weights(i + 1u) / free_weight;
    double observed = counts[key(i)];
    chi2 += (observed - expected) * (observed - expected) / expected;
  }
  EXPECT_LT(chi2, chi2_critical_19) << GetParam().name;
  // The same index and seed draw the same rows.
  plan.count = 50;
  auto a = index.draw(plan, exact);
  auto b = index.draw(plan, exact);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->keys, b->keys);
}

INSTANTIATE_TEST_SUITE_P(kinds, sample_index_draws,
                         ::testing::Values(strategy_case{"uniform", sampler_kind::uniform},
                                           strategy_case{"log_uniform", sampler_kind::log_uniform},
                                           strategy_case{"unigram", sampler_kind::unigram}),
                         [](const auto& info) { return std::string{info.param.name}; });

TEST(sample_index, PositivesHoldingNearlyAllTheWeightAreStillNeverDrawn) {
  sample_index index{{sampler_kind::unigram, 1.0}};
  auto exact = [](std::string_view, uint64_t stored) { return stored; };
  index.set("heavy", uint64_t{1} << 40, exact);
  for (int i = 0; i < 4; ++i)
    index.set(key(i), 1, exact);
  auto plan = plan_of(index.stats({}, exact), 400, 3, {"heavy"});
  auto drawn = index.draw(plan, exact);
  ASSERT_TRUE(drawn) << render(drawn.error());
  ASSERT_EQ(drawn->keys.size(), 400u);
  std::set<std::string> seen(drawn->keys.begin(), drawn->keys.end());
  EXPECT_EQ(seen, (std::set<std::string>{key(0), key(1), key(2), key(3)}));
}

TEST(sample_index, NothingToDrawFailsAndChangesNothing) {
  sample_index index{{sampler_kind::unigram, 0.75}};
  auto exact = [](std::string_view, uint64_t stored) { return stored; };
  index.set("only", 3, exact);
  index.set("never-looked-up", 0, exact);
  auto plan = plan_of(index.stats({}, exact), 5, 1, {"only"});
  auto drawn = index.draw(plan, exact);
  ASSERT_FALSE(drawn);
  EXPECT_TRUE(is(drawn.error(), errc::invalid_argument)) << render(drawn.error());
  EXPECT_EQ(index.size(), 2u);
  plan.count = 0;
  ASSERT_TRUE(index.draw(plan, exact));
}

// The key index is open addressing with backward-shift removal: whatever the order of puts and
// removals, every key held stays findable and no removed key is found.
TEST(sample_index, ManyPutsAndRemovalsInShuffledOrderKeepEveryKeyFindable) {
  sample_index index{{sampler_kind::unigram, 0.75}};
  auto exact = [](std::string_view, uint64_t stored) { return stored; };
  constexpr int keys = 20000;
  for (int i = 0; i < keys; ++i)
    index.set(key(i), static_cast<uint64_t>(i % 100), exact);
  std::vector<int> order(keys);
  for (int i = 0; i < keys; ++i)
    order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937{5});
  for (int i : order)
    if (i % 3 != 0)
      index.remove(key(i), exact);
  for (int i = 0; i < keys; i += 6)
    index.set(key(i), 7, exact);
  EXPECT_EQ(index.size(), static_cast<size_t>((keys + 2) / 3));
  for (int i = 0; i < keys; ++i) {
    auto held = index.stored_frequency(key(i));
    if (i % 3 != 0) {
      ASSERT_FALSE(held) << key(i) << " was removed";
      continue;
    }
    ASSERT_TRUE(held) << key(i);
    EXPECT_EQ(*held, i % 6 == 0 ? 7u : static_cast<uint64_t>(i % 100)) << key(i);
  }
}

TEST(sample_index, ALocationIsKeptUntilItsRowIsRemoved) {
  sample_index index{{sampler_kind::unigram, 0.75}};
  auto exact = [](std::string_view, uint64_t stored) { return stored; };
  index.set("a", 1, exact);
  index.set("b", 1, exact);
  index.locate("a", {4096, 2, 300});
  index.locate("absent", {1, 1, 1});
  EXPECT_EQ(index.location("a").offset, 4096u);
  EXPECT_EQ(index.location("a").generation, 2u);
  EXPECT_EQ(index.location("a").length, 300u);
  index.set("a", 9, exact);
  EXPECT_EQ(index.location("a").length, 300u) << "a new frequency does not move the row";
  std::vector<std::string_view> asked{"b", "a", "absent"};
  std::vector<row_locator> got(asked.size());
  index.locations(asked, got);
  EXPECT_EQ(got[0].length, 0u);
  EXPECT_EQ(got[1].offset, 4096u);
  EXPECT_EQ(got[2].length, 0u);
  EXPECT_FALSE(index.stored_frequency("absent"));
  index.remove("a", exact);
  index.set("a", 1, exact);
  EXPECT_EQ(index.location("a").length, 0u) << "a row put again has no location yet";
}

} // namespace
} // namespace darcy::stores
