#include "actors/embedding/key_routing.hpp"

#include <map>

#include <gtest/gtest.h>

#include "compute/hash.hpp"
#include "compute/placement.hpp"

namespace darcy::actors {
namespace {

using strings = std::vector<std::string>;

// Table-driven: every key lands on the shard of its hash once, rows come back to every input
// position, and gradients of repeated keys are summed in input order.
TEST(routed_batch, RoutesEachDistinctKeyOnceAndPutsRowsBackInInputOrder) {
  struct row {
    const char* name;
    std::vector<strings> tables;
    size_t shards;
  } rows[] = {
    {"one table, one shard", {{"a", "b", "a"}}, 1},
    {"one table, repeats, four shards", {{"a", "b", "a", "c", "", "", "b"}}, 4},
    {"two tables sharing keys", {{"x", "y", "x"}, {"x", "z"}}, 3},
    {"many keys", {{}}, 5},
  };
  for (int i = 0; i < 200; ++i)
    rows[3].tables[0].push_back("k" + std::to_string(i % 150));
  for (auto& r : rows) {
    SCOPED_TRACE(r.name);
    std::vector<table_keys> tables;
    std::vector<uint32_t> dims;
    for (size_t t = 0; t < r.tables.size(); ++t) {
      tables.push_back({"t" + std::to_string(t), hash_keys(r.tables[t])});
      dims.push_back(static_cast<uint32_t>(t + 2));
    }
    routed_batch batch{tables, dims, r.shards};
    // Each shard answers a row per key whose values encode (shard, table, key).
    std::map<std::pair<size_t, std::string>, std::vector<float>> row_of;
    std::vector<std::vector<float>> out;
    for (size_t t = 0; t < tables.size(); ++t)
      out.emplace_back(r.tables[t].size() * dims[t]);
    for (auto s : batch.shards()) {
      std::vector<shared_floats> answer;
      for (size_t t = 0; t < tables.size(); ++t) {
        auto& part = batch.part(s)[t];
        EXPECT_EQ(part.name, tables[t].name);
        std::vector<float> values;
        for (size_t k = 0; k < part.keys.size(); ++k) {
          std::string key{part.keys[k]};
          EXPECT_EQ(compute::shard_of_key(key, r.shards), s) << key;
          EXPECT_TRUE(row_of.find({t, key}) == row_of.end()) << "routed twice: " << key;
          std::vector<float> v(dims[t], static_cast<float>(row_of.size()));
          row_of[{t, key}] = v;
          values.insert(values.end(), v.begin(), v.end());
        }
        answer.emplace_back(std::move(values));
      }
      ASSERT_FALSE(batch.scatter(s, answer, out));
    }
    std::vector<std::span<const float>> grads;
    std::vector<std::vector<float>> grad_values;
    for (size_t t = 0; t < tables.size(); ++t) {
      grad_values.emplace_back(r.tables[t].size() * dims[t]);
      for (size_t i = 0; i < grad_values[t].size(); ++i)
        grad_values[t][i] = static_cast<float>(i % 7) * 0.25f;
    }
    for (auto& g : grad_values)
      grads.emplace_back(g);
    for (size_t t = 0; t < tables.size(); ++t) {
      std::map<std::string, std::vector<float>> summed;
      for (size_t k = 0; k < r.tables[t].size(); ++k) {
        auto& key = r.tables[t][k];
        std::vector<float> got(out[t].begin() + k * dims[t], out[t].begin() + (k + 1) * dims[t]);
        EXPECT_EQ(got, (row_of[{t, key}])) << key;
        auto& acc = summed[key];
        acc.resize(dims[t]);
        for (size_t d = 0; d < dims[t]; ++d)
          acc[d] += grad_values[t][k * dims[t] + d];
      }
      for (auto s : batch.shards()) {
        auto part_grads = batch.gather(s, grads);
        auto& part = batch.part(s)[t];
        for (size_t k = 0; k < part.keys.size(); ++k) {
          auto values = part_grads[t].values().subspan(k * dims[t], dims[t]);
          EXPECT_EQ(std::vector<float>(values.begin(), values.end()),
                    summed[std::string{part.keys[k]}]);
        }
      }
    }
  }
}

// Table-driven: each distinct key reaches its shard once, counting its occurrences in the input,
// the counts the input's keys carry included.
TEST(routed_batch, ADistinctKeyCarriesTheSumOfItsOccurrences) {
  struct row {
    const char* name;
    strings keys;
    std::vector<uint32_t> counts;
    size_t shards;
  } rows[] = {
    {"no repeat, uncounted", {"a", "b", "c"}, {}, 3},
    {"repeats", {"a", "b", "a", "a", "c", "b"}, {}, 2},
    {"counted input", {"a", "b"}, {4, 9}, 2},
    {"counted input with repeats", {"a", "b", "a", "c"}, {4, 1, 2, 5}, 3},
  };
  for (auto& r : rows) {
    SCOPED_TRACE(r.name);
    key_batch keys;
    std::map<std::string, uint64_t> expected;
    for (size_t k = 0; k < r.keys.size(); ++k) {
      auto count = r.counts.empty() ? 1u : r.counts[k];
      keys.push_back(r.keys[k], compute::hash_key(r.keys[k]), count);
      expected[r.keys[k]] += count;
    }
    routed_batch batch{{{"t", keys}}, {2}, r.shards};
    std::map<std::string, uint64_t> got;
    bool repeats = false;
    for (auto s : batch.shards()) {
      auto& part = batch.part(s)[0].keys;
      for (size_t k = 0; k < part.size(); ++k) {
        got[std::string{part[k]}] += part.count(k);
        repeats = repeats || part.count(k) > 1;
      }
    }
    EXPECT_EQ(got, expected);
    EXPECT_EQ(repeats, expected.size() < r.keys.size() || !r.counts.empty());
  }
}

TEST(routed_batch, AShardAnswerOfTheWrongSizeIsRefused) {
  std::vector<table_keys> tables = {{"t", hash_keys({"a", "b"})}};
  routed_batch batch{tables, {2}, 1};
  std::vector<std::vector<float>> out = {std::vector<float>(4)};
  EXPECT_TRUE(batch.scatter(0, {shared_floats{std::vector<float>(3)}}, out));
  EXPECT_TRUE(batch.scatter(0, {}, out));
  EXPECT_FALSE(batch.scatter(0, {shared_floats{std::vector<float>(4)}}, out));
}

} // namespace
} // namespace darcy::actors
