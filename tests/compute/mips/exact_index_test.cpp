#include "compute/mips/exact_index.hpp"

#include <algorithm>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace darcy::compute::mips {
namespace {

// Small integer values: every inner product is exact in float, so the index must equal brute
// force bit for bit, ties (frequent here) broken by id.
row_matrix integer_matrix(Eigen::Index rows, Eigen::Index cols, uint64_t seed) {
  std::mt19937_64 rng{seed};
  row_matrix m(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r)
    for (Eigen::Index c = 0; c < cols; ++c)
      m(r, c) = static_cast<float>(static_cast<int>(rng() % 7) - 3);
  return m;
}

std::vector<hit> brute_force(const row_matrix& items, const std::vector<uint64_t>& ids,
                             const Eigen::RowVectorXf& query, size_t k) {
  std::vector<hit> all;
  for (Eigen::Index r = 0; r < items.rows(); ++r)
    all.push_back({items.row(r).dot(query),
                   ids.empty() ? static_cast<uint64_t>(r) : ids[static_cast<size_t>(r)]});
  std::sort(all.begin(), all.end(), ranks_before);
  all.resize(k);
  return all;
}

TEST(exact_index, equals_brute_force_for_every_batch_size_thread_count_and_k) {
  struct search_case {
    Eigen::Index items, dim, queries;
    size_t k;
    uint32_t threads;
  };
  // 40000 items span several item blocks and let two threads split them; 100 queries span
  // two query blocks.
  for (auto x : {search_case{40000, 16, 1, 10, 1}, search_case{40000, 16, 1, 10, 2},
                 search_case{40000, 16, 100, 10, 2}, search_case{40000, 64, 3, 1, 1},
                 search_case{5000, 7, 100, 50, 2}, search_case{300, 5, 4, 300, 2}}) {
    auto index = exact_index::make(integer_matrix(x.items, x.dim, 1));
    ASSERT_TRUE(index);
    auto queries = integer_matrix(x.queries, x.dim, 2);
    auto hits = index->search(queries, x.k, x.threads);
    ASSERT_TRUE(hits) << render(hits.error());
    ASSERT_EQ(hits->size(), static_cast<size_t>(x.queries));
    for (Eigen::Index q = 0; q < x.queries; ++q)
      EXPECT_EQ((*hits)[static_cast<size_t>(q)],
                brute_force(index->items(), {}, queries.row(q), x.k))
        << x.items << " items, dim " << x.dim << ", " << x.queries << " queries, k " << x.k << ", "
        << x.threads << " threads, query " << q;
  }
}

TEST(exact_index, hits_carry_the_given_ids_and_ties_go_to_the_smaller_id) {
  auto items = integer_matrix(2000, 4, 3);
  std::vector<uint64_t> ids(2000);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = 1'000'000 - 7 * i;
  auto index = exact_index::make(items, ids);
  ASSERT_TRUE(index);
  auto queries = integer_matrix(5, 4, 4);
  auto hits = index->search(queries, 25);
  ASSERT_TRUE(hits);
  for (Eigen::Index q = 0; q < queries.rows(); ++q)
    EXPECT_EQ((*hits)[static_cast<size_t>(q)], brute_force(items, ids, queries.row(q), 25));
}

TEST(exact_index, shards_merged_equal_one_index_over_all_items) {
  auto items = integer_matrix(9000, 8, 5);
  auto whole = exact_index::make(items);
  ASSERT_TRUE(whole);
  std::vector<exact_index> shards;
  Eigen::Index begin = 0;
  for (Eigen::Index size : {1000, 5000, 3000}) {
    std::vector<uint64_t> ids(static_cast<size_t>(size));
    for (Eigen::Index i = 0; i < size; ++i)
      ids[static_cast<size_t>(i)] = static_cast<uint64_t>(begin + i);
    auto shard = exact_index::make(items.middleRows(begin, size), ids);
    ASSERT_TRUE(shard);
    shards.push_back(std::move(*shard));
    begin += size;
  }
  auto queries = integer_matrix(10, 8, 6);
  auto expected = whole->search(queries, 20);
  ASSERT_TRUE(expected);
  std::vector<std::vector<std::vector<hit>>> per_shard;
  for (auto& shard : shards) {
    auto hits = shard.search(queries, 20);
    ASSERT_TRUE(hits);
    per_shard.push_back(std::move(*hits));
  }
  for (size_t q = 0; q < 10; ++q) {
    std::vector<std::vector<hit>> lists;
    for (auto& hits : per_shard)
      lists.push_back(hits[q]);
    EXPECT_EQ(merge_top_k(lists, 20), (*expected)[q]) << "query " << q;
  }
}

TEST(exact_index, bad_queries_are_refused_with_their_reason) {
  auto index = exact_index::make(integer_matrix(50, 4, 7));
  ASSERT_TRUE(index);
  auto nan = std::numeric_limits<float>::quiet_NaN();
  auto inf = std::numeric_limits<float>::infinity();
  struct bad_case {
    const char* what;
    row_matrix queries;
    size_t k;
    errc code;
    const char* named;
  };
  row_matrix good = integer_matrix(3, 4, 8);
  row_matrix with_nan = good, with_inf = good;
  with_nan(2, 1) = nan;
  with_inf(1, 3) = -inf;
  std::vector<bad_case> cases{
    {"wrong dimension", integer_matrix(1, 5, 9), 3, errc::dimension_mismatch, "dim 5"},
    {"NaN", with_nan, 3, errc::invalid_argument, "query 2"},
    {"infinity", with_inf, 3, errc::invalid_argument, "query 1"},
    {"k of 0", good, 0, errc::invalid_argument, "at least 1"},
    {"k above the items", good, 51, errc::invalid_argument, "50 items"}};
  for (auto& x : cases) {
    auto hits = index->search(x.queries, x.k);
    ASSERT_FALSE(hits) << x.what;
    EXPECT_TRUE(is(hits.error(), x.code)) << x.what << ": " << render(hits.error());
    EXPECT_NE(render(hits.error()).find(x.named), std::string::npos) << render(hits.error());
  }
  EXPECT_TRUE(index->search(good, 50)) << "k equal to the item count is allowed";
}

TEST(exact_index, items_with_nan_or_ids_of_another_length_are_refused) {
  auto items = integer_matrix(10, 3, 10);
  items(6, 0) = std::numeric_limits<float>::quiet_NaN();
  auto with_nan = exact_index::make(items);
  ASSERT_FALSE(with_nan);
  EXPECT_NE(render(with_nan.error()).find("item 6"), std::string::npos);
  auto short_ids = exact_index::make(integer_matrix(10, 3, 10), std::vector<uint64_t>(9));
  ASSERT_FALSE(short_ids);
  EXPECT_TRUE(is(short_ids.error(), errc::dimension_mismatch));
}

} // namespace
} // namespace darcy::compute::mips
