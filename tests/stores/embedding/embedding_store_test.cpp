// Tests stores/embedding/embedding_store's sampling over every backend: the index the stores keep
// agrees with a pass over their rows after lookups, evictions, spills to disk and restores.
#include "stores/embedding/embedding_store.hpp"

#include <cmath>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "compute/hash.hpp"
#include "compute/sampler.hpp"
#include "messages/error.hpp"
#include "stores/embedding/de_config.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

struct backend_case {
  const char* name;
  backend_kind backend;
  eviction_config eviction;
  uint64_t cache_bytes;
  /// The store behind an ANN index (a forwarding_store), as make_store wraps it.
  bool ann = false;
};

class sampling_stores : public ::testing::TestWithParam<backend_case> {
protected:
  std::unique_ptr<embedding_store> make(const std::string& dir) {
    de_config cfg;
    cfg.name = "labels";
    cfg.dim = 4;
    cfg.backend = GetParam().backend;
    cfg.eviction = GetParam().eviction;
    cfg.cache_bytes = GetParam().cache_bytes;
    cfg.path = dir + "/db";
    cfg.sampler = {sampler_kind::unigram, 0.75};
    cfg.ann.enabled = GetParam().ann;
    auto store = stores::make_store(cfg);
    EXPECT_TRUE(store) << render(store.error());
    return std::move(*store);
  }
};

void look(embedding_store& store, const std::vector<std::string>& keys) {
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<float> out(keys.size() * store.dim());
  ASSERT_FALSE(store.lookup(views, out));
}

std::vector<uint64_t> hashes_of(const std::vector<std::string_view>& keys) {
  std::vector<uint64_t> hashes;
  for (auto key : keys)
    hashes.push_back(compute::hash_key(key));
  return hashes;
}

/// Every row's frequency, by a pass over the rows.
std::map<std::string, uint64_t> rows_of(embedding_store& store) {
  std::map<std::string, uint64_t> rows;
  EXPECT_FALSE(
    store.export_rows([&](const row_record& r) { rows.emplace(std::string{r.key}, r.frequency); }));
  return rows;
}

TEST_P(sampling_stores, TheIndexAgreesWithAPassOverTheRowsAfterEvictionsAndSpills) {
  test::temp_dir dir{"sampling_store"};
  auto store = make(dir.path());
  std::vector<std::string> first;
  for (int i = 0; i < 200; ++i)
    first.push_back("a" + std::to_string(i));
  look(*store, first);
  // The first call builds the index; later lookups (key i of 600 looked up i % 37 + 1 times)
  // keep it, while eviction (max 400 rows) and the tier's small cache remove and spill rows.
  ASSERT_TRUE(store->sample_metadata({}));
  for (int round = 0; round < 37; ++round) {
    std::vector<std::string> batch;
    for (int i = 0; i < 600; ++i)
      if (i % 37 >= round)
        batch.push_back("b" + std::to_string(i));
    look(*store, batch);
  }
  auto rows = rows_of(*store);
  ASSERT_GT(rows.size(), 100u);
  std::map<uint32_t, uint64_t> histogram;
  double weight = 0;
  for (auto& [key, f] : rows) {
    ++histogram[compute::frequency_class(f)];
    weight += std::pow(static_cast<double>(f), 0.75);
  }
  auto stats = store->sample_metadata({"b36", "a1", "gone"});
  ASSERT_TRUE(stats) << render(stats.error());
  std::map<uint32_t, uint64_t> got;
  for (size_t i = 0; i < stats->classes.size(); ++i)
    got[stats->classes[i]] = stats->counts[i];
  EXPECT_EQ(got, histogram) << GetParam().name;
  EXPECT_NEAR(stats->weight, weight, 1e-9 * weight);
  for (size_t i = 0; i < stats->positives.size(); ++i)
    EXPECT_EQ(stats->positive_freqs[i], rows.at(stats->positives[i])) << stats->positives[i];
  // Draws name only rows the store holds, with their exact weights.
  compute::row_weights weights{stats->sampler, stats->classes, stats->counts};
  sample_plan plan{stats->sampler, {}, weight, 3000, 11, {"b36"}};
  auto drawn = store->sample(plan);
  ASSERT_TRUE(drawn) << render(drawn.error());
  ASSERT_EQ(drawn->keys.size(), 3000u);
  for (size_t i = 0; i < drawn->keys.size(); ++i) {
    auto found = rows.find(drawn->keys[i]);
    ASSERT_NE(found, rows.end()) << "drew a row the store does not hold: " << drawn->keys[i];
    ASSERT_NE(drawn->keys[i], "b36");
    EXPECT_DOUBLE_EQ(drawn->probs[i], weights(found->second) / weight);
  }
  // Rows imported (a restore) enter the index with their frequency; the import may evict
  // others (LFU at max_rows), which leave it.
  std::vector<float> values(4, 0.5f), slots(store->slot_floats(), 0.1f);
  ASSERT_FALSE(store->import_row({"restored", values, slots, 5000, 0, 0}));
  auto after = store->sample_metadata({"restored"});
  ASSERT_TRUE(after);
  ASSERT_EQ(after->positive_freqs, (std::vector<uint64_t>{5000}));
  double weight_after = 0;
  for (auto& [key, f] : rows_of(*store))
    weight_after += std::pow(static_cast<double>(f), 0.75);
  EXPECT_NEAR(after->weight, weight_after, 1e-9 * weight_after);
}

// Table-driven: a lookup whose keys carry counts adds each count to its row's frequency (a key
// the caller deduplicated counts as often as it occurred), and the sampling index follows.
TEST_P(sampling_stores, ACountedLookupAddsEachKeysOccurrencesToItsFrequency) {
  struct step {
    std::vector<std::string> keys;
    std::vector<uint32_t> counts;
  } steps[] = {
    {{"a", "b", "c"}, {}},
    {{"a", "b"}, {5, 1}},
    {{"c", "d", "a"}, {300, 2, 1000}},
    {{"b"}, {UINT32_MAX - 1}},
    // Read, not counted: "d" keeps its frequency, "e" is created with none.
    {{"d", "e"}, {0, 0}},
  };
  std::map<std::string, uint64_t> expected;
  test::temp_dir dir{"counted_lookup"};
  auto store = make(dir.path());
  ASSERT_TRUE(store->sample_metadata({}));
  for (auto& s : steps) {
    std::vector<std::string_view> views(s.keys.begin(), s.keys.end());
    auto hashes = hashes_of(views);
    std::vector<float> out(s.keys.size() * store->dim());
    ASSERT_FALSE(store->lookup(views, hashes, s.counts, out));
    for (size_t k = 0; k < s.keys.size(); ++k)
      expected[s.keys[k]] += s.counts.empty() ? 1 : s.counts[k];
  }
  EXPECT_EQ(rows_of(*store), expected) << GetParam().name;
  double weight = 0;
  for (auto& [key, f] : expected)
    weight += std::pow(static_cast<double>(f), 0.75);
  auto stats = store->sample_metadata({"a", "b"});
  ASSERT_TRUE(stats) << render(stats.error());
  EXPECT_NEAR(stats->weight, weight, 1e-9 * weight);
  EXPECT_EQ(stats->positive_freqs, (std::vector<uint64_t>{expected["a"], expected["b"]}));
  // Counts of the wrong length are refused, and no row is created or counted.
  std::vector<std::string_view> views{"a", "f"};
  auto hashes = hashes_of(views);
  std::vector<float> out(2 * store->dim());
  for (auto& bad : std::vector<std::vector<uint32_t>>{{3}, {1, 2, 3}}) {
    auto err = store->lookup(views, hashes, bad, out);
    EXPECT_TRUE(is(err, errc::invalid_argument)) << render(err);
  }
  EXPECT_EQ(rows_of(*store), expected);
}

INSTANTIATE_TEST_SUITE_P(
  backends, sampling_stores,
  ::testing::Values(
    backend_case{"memory_lfu", backend_kind::memory, eviction_config{eviction_kind::lfu, 0, 400},
                 0},
    backend_case{"leveldb_spilled", backend_kind::leveldb, eviction_config{}, uint64_t{16} << 10},
    backend_case{"leveldb_lfu", backend_kind::leveldb, eviction_config{eviction_kind::lfu, 0, 400},
                 uint64_t{16} << 10},
    backend_case{"memory_indexed", backend_kind::memory, eviction_config{}, 0, true}),
  [](const auto& info) { return std::string{info.param.name}; });

} // namespace
} // namespace darcy::stores
