// Tests stores/embedding/indexed_store: created, updated, imported, removed and evicted rows all
// reach the index; reading every list answers the exact top-k under each score; the backlog and
// the staleness are reported.
#include "stores/embedding/indexed_store.hpp"

#include <algorithm>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::stores {
namespace {

constexpr uint32_t dim = 8;

de_config items_config(bool ann, eviction_config eviction = {}) {
  de_config cfg;
  cfg.name = "items";
  cfg.dim = dim;
  cfg.init = {init_kind::normal, 0, 0, 0, 1.0f, 5};
  cfg.optimizer = {optimizer_kind::sgd, 0.5f};
  cfg.eviction = eviction;
  cfg.ann.enabled = ann;
  return cfg;
}

std::unique_ptr<embedding_store> indexed_table(eviction_config eviction = {}) {
  auto store = make_store(items_config(true, eviction));
  EXPECT_TRUE(store) << render(store.error());
  return std::move(*store);
}

std::string key_of(size_t i) {
  return "k" + std::to_string(i);
}

void look(embedding_store& s, size_t first, size_t count) {
  std::vector<std::string> keys;
  for (size_t i = first; i < first + count; ++i)
    keys.push_back(key_of(i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<float> out(keys.size() * dim);
  ASSERT_FALSE(s.lookup(views, out));
}

void refresh_all(indexed_store& s) {
  for (;;) {
    auto more = s.refresh(300);
    ASSERT_TRUE(more) << render(more.error());
    if (!*more)
      return;
  }
}

/// The exact top k of every stored row, by the scan.
std::vector<std::pair<std::string, float>> exact(embedding_store& s, const std::vector<float>& q,
                                                 size_t k, top_k_score score) {
  std::vector<std::pair<std::string, float>> all;
  EXPECT_FALSE(s.scan([&](std::string_view key, std::span<const float> row) {
    double dot = 0, rows = 0, queries = 0;
    for (size_t d = 0; d < dim; ++d) {
      float qd = d < q.size() ? q[d] : 1.0f;
      dot += double{qd} * row[d];
      rows += double{row[d]} * row[d];
      queries += double{qd} * qd;
    }
    if (score == top_k_score::cosine)
      dot /= std::sqrt(rows * queries);
    all.emplace_back(std::string{key}, static_cast<float>(dot));
  }));
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  });
  all.resize(std::min(all.size(), k));
  return all;
}

TEST(indexed_store, reading_every_list_answers_the_exact_top_k_under_each_score) {
  auto store = indexed_table();
  look(*store, 0, 3000);
  auto& index = *store->ann();
  EXPECT_EQ(index.backlog(), 3000u);
  refresh_all(index);
  EXPECT_EQ(index.backlog(), 0u);
  EXPECT_EQ(store->stats().ann_rows, 3000u);
  // The index's memory counts: at least each row's code.
  auto plain = make_store(items_config(false));
  ASSERT_TRUE(plain);
  look(**plain, 0, 3000);
  EXPECT_GE(store->stats().bytes, (*plain)->stats().bytes + 3000 * dim);
  struct score_case {
    top_k_score score;
    size_t query_values;
  };
  std::mt19937_64 rng{9};
  std::normal_distribution<float> gauss;
  for (auto c : {score_case{top_k_score::inner_product, dim},
                 score_case{top_k_score::inner_product_bias, dim - 1},
                 score_case{top_k_score::cosine, dim}}) {
    SCOPED_TRACE(static_cast<int>(c.score));
    std::vector<float> q(c.query_values);
    for (auto& x : q)
      x = gauss(rng);
    auto got = index.search(q, 10, c.score, 10000, 3000);
    ASSERT_TRUE(got) << render(got.error());
    auto want = exact(*store, q, 10, c.score);
    ASSERT_EQ(got->keys.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got->keys[i], want[i].first);
      EXPECT_NEAR(got->scores[i], want[i].second, 1e-4);
    }
  }
}

TEST(indexed_store, updates_imports_removals_and_evictions_reach_the_index) {
  auto store = indexed_table({eviction_kind::lru, 0, 2000});
  auto& index = *store->ann();
  look(*store, 0, 2000);
  refresh_all(index);
  // An update moves rows; 500 more rows evict the 500 least recently used.
  std::vector<std::string> moved;
  for (size_t i = 0; i < 2000; i += 7)
    moved.push_back(key_of(i));
  std::vector<std::string_view> views(moved.begin(), moved.end());
  std::vector<float> grads(moved.size() * dim, -4.0f);
  ASSERT_FALSE(store->update(views, grads, 1));
  look(*store, 2000, 500);
  float values[dim] = {9, 9, 9, 9, 9, 9, 9, 9};
  ASSERT_FALSE(store->import_row({"imported", values, {}, 1, 0, 0}));
  std::string_view gone[] = {"k2001"};
  ASSERT_FALSE(store->remove_rows(gone));
  EXPECT_GT(index.backlog(), 0u);
  auto stale = index.search(std::vector<float>(dim, 1.0f), 5, top_k_score::inner_product, 16, 100);
  ASSERT_TRUE(stale);
  EXPECT_GT(stale->staleness_s, 0.0) << "changes wait, and the answer says so";
  refresh_all(index);
  auto stats = store->stats();
  EXPECT_EQ(stats.ann_rows, stats.rows);
  EXPECT_EQ(stats.ann_backlog, 0u);
  EXPECT_GT(stats.evictions, 0u);
  EXPECT_GT(stats.ann_staleness_p99_s, 0.0);
  // Every stored row is answered once when every list is read; no evicted or removed one is.
  std::vector<float> q(dim, 1.0f);
  auto all = index.search(q, 100000, top_k_score::inner_product, 100000, 100000);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->keys.size(), stats.rows);
  EXPECT_EQ(all->keys.front(), "imported");
  EXPECT_EQ(all->staleness_s, 0.0);
  auto want = exact(*store, q, 10, top_k_score::inner_product);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(all->keys[i], want[i].first);
  EXPECT_EQ(std::count(all->keys.begin(), all->keys.end(), "k2001"), 0);
}

TEST(indexed_store, opening_over_rows_already_stored_notes_them_all) {
  de_config cfg;
  cfg.name = "items";
  cfg.dim = dim;
  auto plain = make_store(cfg);
  ASSERT_TRUE(plain);
  look(**plain, 0, 40);
  auto store = indexed_store::open(std::move(*plain), {.enabled = true});
  ASSERT_TRUE(store) << render(store.error());
  EXPECT_EQ((*store)->backlog(), 40u);
  refresh_all(**store);
  EXPECT_EQ((*store)->indexed_rows(), 40u);
}

} // namespace
} // namespace darcy::stores
