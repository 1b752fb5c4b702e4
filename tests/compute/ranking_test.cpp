#include "compute/ranking.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "compute/synthetic_matrix.hpp"

namespace darcy::compute {
namespace {

TEST(ranking_accumulator, KnownValuesForOneRow) {
  ranking_accumulator acc{4};
  std::vector<uint32_t> ranked = {7, 3, 9, 1};
  std::vector<uint32_t> relevant = {1, 3, 5};
  acc.add(ranked, relevant);
  auto m = acc.result();
  EXPECT_DOUBLE_EQ(m.precision, 2.0 / 4);
  EXPECT_DOUBLE_EQ(m.recall, 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.map, (1.0 / 2 + 2.0 / 4) / 3);
  double dcg = 1 / std::log2(3.0) + 1 / std::log2(5.0);
  double idcg = 1 + 1 / std::log2(3.0) + 1 / std::log2(4.0);
  EXPECT_DOUBLE_EQ(m.ndcg, dcg / idcg);
  EXPECT_EQ(m.rows, 1u);
}

TEST(ranking_accumulator, PerfectRankingScoresOne) {
  ranking_accumulator acc{2};
  std::vector<uint32_t> ranked = {4, 2};
  std::vector<uint32_t> relevant = {2, 4};
  acc.add(ranked, relevant);
  acc.add(ranked, {}); // ignored
  auto m = acc.result();
  EXPECT_EQ(m.rows, 1u);
  EXPECT_DOUBLE_EQ(m.precision, 1);
  EXPECT_DOUBLE_EQ(m.map, 1);
  EXPECT_DOUBLE_EQ(m.ndcg, 1);
}

TEST(top_columns, SkipsSeenAndNonCandidates) {
  std::vector<float> scores = {5, 9, 1, 7, 8};
  std::vector<uint32_t> seen = {1};
  EXPECT_EQ(top_columns(scores, seen, 4, 2), (std::vector<uint32_t>{3, 0}));
}

TEST(split_holdout, DisjointCompleteAndSeeded) {
  auto m = *synthetic_matrix({100, 80, 2000, 5});
  auto a = split_holdout(m, 0.2, 3);
  auto b = split_holdout(m, 0.2, 3);
  EXPECT_EQ(a.test.indices, b.test.indices);
  EXPECT_EQ(a.train.nnz() + a.test.nnz(), m.nnz());
  EXPECT_NEAR(static_cast<double>(a.test.nnz()) / m.nnz(), 0.2, 0.03);
  for (uint64_t r = 0; r < m.rows; ++r) {
    EXPECT_GE(a.train.row_size(r), 1u);
    for (auto c : a.test.row_indices(r)) {
      auto train = a.train.row_indices(r);
      EXPECT_FALSE(std::binary_search(train.begin(), train.end(), c));
    }
  }
}

TEST(balanced_blocks, CoversAllRowsWithSimilarWork) {
  auto m = *synthetic_matrix({1000, 300, 30000, 8});
  auto bounds = balanced_blocks(m, 4);
  ASSERT_EQ(bounds.size(), 5u);
  EXPECT_EQ(bounds.front(), 0u);
  EXPECT_EQ(bounds.back(), m.rows);
  for (size_t b = 0; b + 1 < bounds.size(); ++b) {
    auto work = m.offsets[bounds[b + 1]] - m.offsets[bounds[b]] + 16 * (bounds[b + 1] - bounds[b]);
    EXPECT_NEAR(static_cast<double>(work), (m.nnz() + 16.0 * m.rows) / 4, 0.05 * m.nnz());
  }
}

} // namespace
} // namespace darcy::compute
