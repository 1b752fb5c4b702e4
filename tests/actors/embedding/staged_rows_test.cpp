// A sync's staged rows: lookups read them over the store's at once, they reach the store a
// chunk at a time in order, and finish_staged merges what is left and drops them.
#include "actors/embedding/staged_rows.hpp"

#include <gtest/gtest.h>

#include "actors/embedding/shard_tables.hpp"
#include "messages/error.hpp"
#include "stores/embedding/memory_store.hpp"

namespace darcy::actors {
namespace {

constexpr size_t row_dim = 2;

std::unique_ptr<stores::memory_store> store_with(
  const std::vector<std::pair<std::string, std::vector<float>>>& rows) {
  stores::memory_store_options o;
  o.dim = row_dim;
  o.init.seed = 1;
  auto store = stores::memory_store::make(o);
  EXPECT_TRUE(store) << render(store.error());
  for (auto& [key, values] : rows)
    EXPECT_FALSE((*store)->import_row({key, values, {}, 1, 1, 0}));
  return std::move(*store);
}

std::vector<stores::stored_row> rows_of(
  const std::vector<std::pair<std::string, std::vector<float>>>& rows) {
  std::vector<stores::stored_row> out;
  for (auto& [key, values] : rows)
    out.push_back({key, values, {}, 1, 1, 0});
  return out;
}

/// The store's rows of `keys`, then the same read with `staged` over them.
std::pair<std::vector<float>, std::vector<float>> read(stores::embedding_store& store,
                                                       const staged_rows& staged,
                                                       const std::vector<std::string_view>& keys) {
  std::vector<float> plain(keys.size() * row_dim);
  EXPECT_FALSE(store.lookup(keys, plain));
  auto over = plain;
  staged.read(keys, over, row_dim);
  return {plain, over};
}

TEST(staged_rows, lookups_read_staged_rows_over_the_store_and_others_unchanged) {
  auto store = store_with({{"a", {1, 1}}, {"b", {2, 2}}});
  staged_rows staged{rows_of({{"b", {20, 20}}, {"c", {30, 30}}})};
  auto [plain, over] = read(*store, staged, {"a", "b", "c", "b"});
  EXPECT_EQ(plain[2], 2.0f);
  EXPECT_EQ(over, (std::vector<float>{1, 1, 20, 20, 30, 30, 20, 20}));
}

TEST(staged_rows, merges_reach_the_store_a_chunk_at_a_time_in_order) {
  struct merge_case {
    size_t rows;
    size_t chunk;
    size_t calls_until_done;
  };
  const merge_case cases[] = {{5, 2, 3}, {4, 2, 2}, {3, 10, 1}, {1, 1, 1}};
  for (auto& c : cases) {
    auto store = store_with({});
    std::vector<std::pair<std::string, std::vector<float>>> rows;
    for (size_t i = 0; i < c.rows; ++i)
      rows.push_back({"k" + std::to_string(i), {float(i), float(i)}});
    staged_rows staged{rows_of(rows)};
    size_t calls = 0;
    for (bool done = false; !done; ++calls) {
      auto merged = staged.merge(*store, c.chunk);
      ASSERT_TRUE(merged) << render(merged.error());
      done = *merged;
      EXPECT_EQ(store->stats().rows, std::min(c.rows, (calls + 1) * c.chunk)) << c.rows;
    }
    EXPECT_EQ(calls, c.calls_until_done) << c.rows << " rows, chunks of " << c.chunk;
    std::vector<std::string_view> keys;
    for (auto& [key, values] : rows)
      keys.push_back(key);
    auto [plain, over] = read(*store, staged, keys);
    EXPECT_EQ(plain, over) << "every staged row is the store's now";
  }
}

TEST(staged_rows, finish_merges_what_is_left_and_drops_the_rows) {
  std::map<std::string, shard_table> tables;
  tables["t"].store = store_with({{"a", {1, 1}}});
  tables["t"].staged = std::make_shared<staged_rows>(rows_of({{"a", {5, 5}}, {"z", {9, 9}}}));
  ASSERT_TRUE(*tables["t"].staged->merge(*tables["t"].store, 1) == false);
  tables["u"].store = store_with({});
  ASSERT_FALSE(finish_staged(tables));
  EXPECT_EQ(tables["t"].staged, nullptr);
  std::vector<float> out(2 * row_dim);
  std::vector<std::string_view> keys{"a", "z"};
  ASSERT_FALSE(tables["t"].store->lookup(keys, out));
  EXPECT_EQ(out, (std::vector<float>{5, 5, 9, 9}));
  std::vector<float> staged_out(2 * row_dim, -1);
  read_staged(tables["t"], keys, staged_out);
  EXPECT_EQ(staged_out, (std::vector<float>{-1, -1, -1, -1})) << "nothing staged reads nothing";
}

} // namespace
} // namespace darcy::actors
