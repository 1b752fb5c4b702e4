#include "compute/top_k.hpp"

#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "messages/errc.hpp"

namespace darcy::compute {
namespace {

row_matrix random_matrix(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
  std::mt19937 rng{seed};
  std::normal_distribution<float> n{0, 1};
  row_matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i)
    m.data()[i] = n(rng);
  return m;
}

// Brute force in double precision: score every candidate, sort everything.
std::vector<hit> brute_force(const row_matrix& queries, Eigen::Index q, const row_matrix& cands,
                             const std::vector<float>& biases, size_t k) {
  std::vector<hit> all;
  for (Eigen::Index c = 0; c < cands.rows(); ++c) {
    double s = biases.empty() ? 0.0 : biases[static_cast<size_t>(c)];
    for (Eigen::Index d = 0; d < cands.cols(); ++d)
      s += static_cast<double>(queries(q, d)) * cands(c, d);
    all.push_back({static_cast<float>(s), static_cast<uint64_t>(c)});
  }
  std::sort(all.begin(), all.end(), ranks_before);
  all.resize(std::min(k, all.size()));
  return all;
}

// Ids must match exactly; scores up to float summation order.
void expect_same_hits(const std::vector<hit>& actual, const std::vector<hit>& expected,
                      const std::string& context) {
  ASSERT_EQ(actual.size(), expected.size()) << context;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].id, expected[i].id) << context << " rank " << i;
    EXPECT_NEAR(actual[i].score, expected[i].score, 1e-4) << context << " rank " << i;
  }
}

TEST(top_k, EqualsBruteForceForEveryKWithAndWithoutBias) {
  auto queries = random_matrix(7, 16, 1);
  auto cands = random_matrix(20000, 16, 2);
  std::vector<float> biases(20000);
  std::mt19937 rng{3};
  std::uniform_real_distribution<float> u{-1, 1};
  for (auto& b : biases)
    b = u(rng);
  const std::vector<float> no_bias;
  for (bool with_bias : {false, true})
    for (size_t k : {size_t{1}, size_t{10}, size_t{100}}) {
      const auto& used = with_bias ? biases : no_bias;
      auto got = top_k_inner_product(queries, cands, used, k);
      ASSERT_TRUE(got) << render(got.error());
      for (Eigen::Index q = 0; q < queries.rows(); ++q) {
        expect_same_hits((*got)[static_cast<size_t>(q)], brute_force(queries, q, cands, used, k),
                         "k=" + std::to_string(k) + " q=" + std::to_string(q));
      }
    }
}

TEST(top_k, ShardAnswersMergeIntoTheGlobalAnswer) {
  auto queries = random_matrix(3, 8, 4);
  auto cands = random_matrix(3000, 8, 5);
  auto global = top_k_inner_product(queries, cands, {}, 25);
  ASSERT_TRUE(global);
  // Three shards of 1000 rows each; ids are made global before merging.
  for (Eigen::Index q = 0; q < queries.rows(); ++q) {
    std::vector<std::vector<hit>> shards;
    for (Eigen::Index s = 0; s < 3; ++s) {
      row_matrix part = cands.middleRows(s * 1000, 1000);
      auto local = top_k_inner_product(queries.middleRows(q, 1), part, {}, 25);
      ASSERT_TRUE(local);
      for (auto& h : (*local)[0])
        h.id += static_cast<uint64_t>(s * 1000);
      shards.push_back((*local)[0]);
    }
    expect_same_hits(merge_top_k(shards, 25), (*global)[static_cast<size_t>(q)],
                     "q=" + std::to_string(q));
  }
}

TEST(top_k, EdgeCasesAndBadShapes) {
  auto queries = random_matrix(2, 4, 6);
  auto cands = random_matrix(5, 4, 7);
  auto all = top_k_inner_product(queries, cands, {}, 50);
  ASSERT_TRUE(all);
  EXPECT_EQ((*all)[0].size(), 5u) << "k beyond the candidates returns them all";
  auto none = top_k_inner_product(queries, cands, {}, 0);
  ASSERT_TRUE(none);
  EXPECT_TRUE((*none)[0].empty());
  auto wrong_dim = top_k_inner_product(random_matrix(1, 3, 8), cands, {}, 2);
  EXPECT_TRUE(is(error_of(wrong_dim), errc::dimension_mismatch));
  std::vector<float> short_bias(4);
  EXPECT_TRUE(
    is(error_of(top_k_inner_product(queries, cands, short_bias, 2)), errc::dimension_mismatch));
}

} // namespace
} // namespace darcy::compute
