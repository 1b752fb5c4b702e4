#include "compute/initializer.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "compute/hash.hpp"
#include "messages/errc.hpp"

namespace darcy::compute {
namespace {

std::vector<float> row_of(const initializer_config& cfg, const std::string& key, size_t dim = 8) {
  std::vector<float> row(dim);
  initialize_row(cfg, hash_key(key), row);
  return row;
}

TEST(initializer, SameSeedAndKeyGiveTheSameRowDifferentKeysDiffer) {
  for (auto kind : {init_kind::uniform, init_kind::normal, init_kind::truncated_normal}) {
    initializer_config cfg;
    cfg.kind = kind;
    EXPECT_EQ(row_of(cfg, "apple"), row_of(cfg, "apple")) << to_string(kind);
    EXPECT_NE(row_of(cfg, "apple"), row_of(cfg, "pear")) << to_string(kind);
    auto other = cfg;
    other.seed = 2;
    EXPECT_NE(row_of(cfg, "apple"), row_of(other, "apple")) << to_string(kind);
  }
}

TEST(initializer, DistributionsHaveTheirConfiguredShape) {
  struct moments {
    double mean = 0, var = 0, min = 1e9, max = -1e9;
  };
  auto measure = [](const initializer_config& cfg) {
    moments m;
    const int n = 4000, dim = 16;
    std::vector<float> all;
    for (int k = 0; k < n; ++k)
      for (auto x : row_of(cfg, "key" + std::to_string(k), dim))
        all.push_back(x);
    for (auto x : all) {
      m.mean += x;
      m.min = std::min<double>(m.min, x);
      m.max = std::max<double>(m.max, x);
    }
    m.mean /= all.size();
    for (auto x : all)
      m.var += (x - m.mean) * (x - m.mean);
    m.var /= all.size();
    return m;
  };
  initializer_config uniform{init_kind::uniform, -0.5f, 0.5f};
  auto u = measure(uniform);
  EXPECT_NEAR(u.mean, 0.0, 0.01);
  EXPECT_NEAR(u.var, 1.0 / 12, 0.005);
  EXPECT_GE(u.min, -0.5);
  EXPECT_LT(u.max, 0.5);

  initializer_config normal{init_kind::normal, 0, 0, 1.0f, 0.2f};
  auto n = measure(normal);
  EXPECT_NEAR(n.mean, 1.0, 0.01);
  EXPECT_NEAR(std::sqrt(n.var), 0.2, 0.01);

  initializer_config truncated{init_kind::truncated_normal, 0, 0, 0.0f, 1.0f};
  auto t = measure(truncated);
  EXPECT_GE(t.min, -2.0);
  EXPECT_LE(t.max, 2.0);
  EXPECT_NEAR(std::sqrt(t.var), 0.88, 0.02) << "stddev of N(0,1) truncated at 2 sigma";

  initializer_config zeros{init_kind::zeros};
  EXPECT_EQ(row_of(zeros, "x"), std::vector<float>(8, 0.0f));
}

TEST(initializer, ValidateRejectsEmptyRangesAndNonPositiveStddev) {
  EXPECT_FALSE(validate(initializer_config{}));
  EXPECT_TRUE(is(validate(initializer_config{init_kind::uniform, 1, 1}), errc::invalid_config));
  EXPECT_TRUE(
    is(validate(initializer_config{init_kind::normal, 0, 0, 0, 0}), errc::invalid_config));
  EXPECT_TRUE(is(validate(initializer_config{init_kind::uniform, NAN, 1}), errc::invalid_config));
}

TEST(hash_key, IsPinnedAcrossBuildsAndSpreadsKeys) {
  // Pinned: changing the hash moves every key to another shard and initial vector.
  EXPECT_EQ(hash_key("hello"), hash_key(std::string{"hel"} + "lo"));
  EXPECT_EQ(hash_key(""), 0x84d69dcef1e6733aULL);
  EXPECT_EQ(hash_key("hello, darcy"), 0x8807bc03d658aa89ULL);
  EXPECT_NE(hash_key("a"), hash_key("b"));
  size_t shards[4] = {};
  for (int i = 0; i < 40000; ++i)
    ++shards[hash_key("key" + std::to_string(i)) % 4];
  for (auto count : shards)
    EXPECT_NEAR(static_cast<double>(count), 10000.0, 300.0);
}

} // namespace
} // namespace darcy::compute
