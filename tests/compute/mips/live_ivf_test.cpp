// The live index reaches its recall on clustered rows, keeps it through updates, removals and a
// retraining half done, and never answers a removed row.
#include "compute/mips/live_ivf.hpp"

#include <set>

#include <gtest/gtest.h>

#include "compute/mips/exact_index.hpp"
#include "tests/support/topic_items.hpp"

namespace darcy::compute::mips {
namespace {

using test::topic_items;

std::span<const float> row_of(const row_matrix& m, Eigen::Index r) {
  return {m.row(r).data(), static_cast<size_t>(m.cols())};
}

/// Recall@10 of the index's best 10 by exact score among its `candidates`, over `queries`,
/// against the exact top 10 of `items` restricted to the ids in `live`.
double recall_at_10(const live_ivf& index, const row_matrix& items, const std::set<uint32_t>& live,
                    const row_matrix& queries, size_t candidates, size_t probes) {
  row_matrix held(static_cast<Eigen::Index>(live.size()), items.cols());
  std::vector<uint64_t> ids;
  for (auto id : live) {
    held.row(static_cast<Eigen::Index>(ids.size())) = items.row(id);
    ids.push_back(id);
  }
  auto truth = top_k_inner_product(queries, held, {}, 10, ids);
  size_t found = 0, wanted = 0;
  for (Eigen::Index q = 0; q < queries.rows(); ++q) {
    auto got = index.search(row_of(queries, q), candidates, probes, false);
    std::set<uint32_t> proposed(got.begin(), got.end());
    for (auto& h : (*truth)[static_cast<size_t>(q)]) {
      ++wanted;
      found += proposed.count(static_cast<uint32_t>(h.id));
    }
  }
  return static_cast<double>(found) / static_cast<double>(wanted);
}

TEST(live_ivf, reaches_its_recall_after_training_and_a_wider_probe_reaches_more) {
  auto items = topic_items(6000, 16, 1);
  auto queries = topic_items(100, 16, 2);
  live_ivf index{16, {.train_rows = 1000, .seed = 3}};
  std::set<uint32_t> live;
  for (uint32_t i = 0; i < items.rows(); ++i) {
    index.upsert(i, row_of(items, i));
    live.insert(i);
    while (index.step(512)) {
    }
  }
  EXPECT_EQ(index.size(), 6000u);
  EXPECT_FALSE(index.retraining());
  // Trained at 1,000 rows, again at 4,001: the square root of 4,001 lists.
  EXPECT_EQ(index.lists(), 63u);
  auto narrow = recall_at_10(index, items, live, queries, 100, 4);
  auto wide = recall_at_10(index, items, live, queries, 100, 16);
  EXPECT_GE(wide, 0.9);
  EXPECT_GE(wide, narrow);
  EXPECT_DOUBLE_EQ(recall_at_10(index, items, live, queries, 6000, 63), 1.0);
}

TEST(live_ivf, updated_and_removed_rows_are_found_where_they_are_now) {
  auto items = topic_items(3000, 16, 4);
  auto moved = topic_items(3000, 16, 5);
  auto queries = topic_items(60, 16, 6);
  live_ivf index{16, {.train_rows = 500, .seed = 1}};
  for (uint32_t i = 0; i < items.rows(); ++i)
    index.upsert(i, row_of(items, i));
  while (index.step(1000)) {
  }
  std::set<uint32_t> live;
  for (uint32_t i = 0; i < items.rows(); ++i) {
    if (i % 3 == 0) {
      items.row(i) = moved.row(i);
      index.upsert(i, row_of(items, i));
    }
    if (i % 5 == 1)
      index.remove(i);
    else
      live.insert(i);
  }
  EXPECT_EQ(index.size(), live.size());
  EXPECT_GE(recall_at_10(index, items, live, queries, 100, 16), 0.9);
  for (Eigen::Index q = 0; q < queries.rows(); ++q)
    for (auto id : index.search(row_of(queries, q), 200, 1000, false))
      EXPECT_EQ(live.count(id), 1u) << "removed row " << id << " answered";
}

TEST(live_ivf, a_retraining_half_done_still_answers_every_row_once) {
  auto items = topic_items(5000, 8, 7);
  live_ivf index{8, {.train_rows = 1000, .seed = 2}};
  for (uint32_t i = 0; i < 1000; ++i)
    index.upsert(i, row_of(items, i));
  while (index.step(100000)) {
  }
  for (uint32_t i = 1000; i < items.rows(); ++i)
    index.upsert(i, row_of(items, i));
  // 5,000 rows outgrew the lists trained at 1,000: a new training, and 1,000 rows moved.
  EXPECT_TRUE(index.step(1000));
  EXPECT_TRUE(index.retraining());
  index.remove(3);
  index.upsert(4, row_of(items, 5));
  auto all = index.search(row_of(items, 0), 10000, 10000, false);
  std::set<uint32_t> distinct(all.begin(), all.end());
  EXPECT_EQ(all.size(), 4999u);
  EXPECT_EQ(distinct.size(), 4999u);
  EXPECT_EQ(distinct.count(3), 0u);
  while (index.step(1000)) {
  }
  EXPECT_FALSE(index.retraining());
  EXPECT_EQ(index.search(row_of(items, 0), 10000, 10000, true).size(), 4999u);
}

TEST(live_ivf, before_training_a_search_reads_every_row_and_zero_rows_are_held) {
  live_ivf index{4};
  std::vector<float> zero(4, 0.0f), one{1, 0, 0, 0}, two{0, 2, 0, 0};
  index.upsert(7, zero);
  index.upsert(8, one);
  index.upsert(9, two);
  EXPECT_FALSE(index.step(10)); // below train_rows
  std::vector<float> q{1, 1, 0, 0};
  EXPECT_EQ(index.search(q, 3, 1, false), (std::vector<uint32_t>{9, 8, 7}));
  // By direction alone the two unit-length rows tie; the smaller id goes first.
  EXPECT_EQ(index.search(q, 2, 1, true), (std::vector<uint32_t>{8, 9}));
  EXPECT_TRUE(index.search(q, 0, 1, false).empty());
}

TEST(live_ivf, a_training_run_apart_is_installed_unless_the_index_trained_since) {
  auto items = topic_items(200, 8, 9);
  live_ivf index{8, {.train_rows = 100, .seed = 4}};
  for (uint32_t i = 0; i < items.rows(); ++i)
    index.upsert(i, row_of(items, i));
  ASSERT_TRUE(index.training_due());
  EXPECT_FALSE(index.step(10, false)) << "no training without leave";
  EXPECT_TRUE(index.training_due());
  auto plan = index.plan_training();
  auto outdated = plan;
  EXPECT_EQ(plan.sample.rows(), 200);
  EXPECT_TRUE(index.install(plan, live_ivf::train(plan)));
  EXPECT_TRUE(index.retraining());
  EXPECT_FALSE(index.install(outdated, live_ivf::train(outdated)));
  while (index.step(50, false)) {
  }
  EXPECT_EQ(index.lists(), 14u); // the square root of 200
  EXPECT_EQ(index.size(), 200u);
  EXPECT_FALSE(index.training_due());
}

} // namespace
} // namespace darcy::compute::mips
