// Tests stores/embedding/tracked_store: which keys count as changed, the bound, and handing the
// store below back.
#include "stores/embedding/tracked_store.hpp"

#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "stores/embedding/memory_store.hpp"

namespace darcy::stores {
namespace {

std::unique_ptr<tracked_store> tracked(size_t limit, eviction_config eviction = {}) {
  memory_store_options opts;
  opts.dim = 2;
  opts.optimizer = {optimizer_kind::sgd, 0.1f};
  opts.eviction = eviction;
  auto inner = memory_store::make(opts);
  EXPECT_TRUE(inner) << render(inner.error());
  return std::make_unique<tracked_store>(std::move(*inner), limit);
}

std::set<std::string> keys_of(const changed_keys& c) {
  return {c.keys.begin(), c.keys.end()};
}

caf::error look(embedding_store& s, std::vector<std::string_view> keys) {
  std::vector<float> out(keys.size() * 2);
  return s.lookup(keys, out);
}

caf::error train(embedding_store& s, std::vector<std::string_view> keys, int64_t step = 1) {
  std::vector<float> grads(keys.size() * 2, 0.5f);
  return s.update(keys, grads, step);
}

TEST(tracked_store, LookupsUpdatesAndImportsAreChangesAndATakeStartsAfresh) {
  auto s = tracked(100);
  ASSERT_FALSE(look(*s, {"a", "b"}));
  ASSERT_FALSE(train(*s, {"b", "c"}));
  float values[] = {1, 2};
  ASSERT_FALSE(s->import_row({"d", values, {}, 1, 0, 0}));
  auto first = s->take();
  EXPECT_FALSE(first.overflowed);
  EXPECT_EQ(keys_of(first), (std::set<std::string>{"a", "b", "c", "d"}));
  EXPECT_TRUE(s->take().keys.empty()) << "a take starts afresh";
  ASSERT_FALSE(train(*s, {"a"}));
  EXPECT_EQ(keys_of(s->take()), (std::set<std::string>{"a"}));
}

TEST(tracked_store, ARefusedUpdateIsNoChange) {
  auto s = tracked(100);
  std::vector<std::string_view> keys{"a"};
  std::vector<float> nan(2, std::nanf(""));
  EXPECT_TRUE(is(s->update(keys, nan, 1), errc::non_finite));
  EXPECT_TRUE(s->take().keys.empty());
}

TEST(tracked_store, RowsTheStoreBelowEvictsAreChanges) {
  // LRU over 4 rows: the fifth key evicts (5% below the limit: down to 4, then 3...).
  auto s = tracked(100, {eviction_kind::lru, 0, 4});
  ASSERT_FALSE(train(*s, {"a", "b", "c", "d"}, 1));
  s->take();
  ASSERT_FALSE(train(*s, {"e"}, 2));
  auto changed = keys_of(s->take());
  EXPECT_GT(s->stats().evictions, 0u);
  EXPECT_TRUE(changed.count("e"));
  EXPECT_EQ(changed.size(), 1 + s->stats().evictions) << "every evicted key is a change";
}

TEST(tracked_store, PastItsLimitTheSetOverflowsUntilTheNextTake) {
  auto s = tracked(3);
  ASSERT_FALSE(look(*s, {"a", "b", "c"}));
  EXPECT_FALSE(s->take().overflowed) << "at the limit";
  ASSERT_FALSE(look(*s, {"a", "b", "c", "d"}));
  auto over = s->take();
  EXPECT_TRUE(over.overflowed);
  EXPECT_TRUE(over.keys.empty());
  ASSERT_FALSE(look(*s, {"a"}));
  EXPECT_FALSE(s->take().overflowed) << "a take starts afresh";
}

TEST(tracked_store, PutBackAddsAnEarlierTakeToTheNext) {
  auto s = tracked(3);
  ASSERT_FALSE(look(*s, {"a", "b"}));
  auto earlier = s->take();
  ASSERT_FALSE(look(*s, {"c"}));
  s->put_back(earlier);
  EXPECT_EQ(keys_of(s->take()), (std::set<std::string>{"a", "b", "c"}));
  ASSERT_FALSE(look(*s, {"a", "b"}));
  s->put_back({{"c", "d"}, false});
  EXPECT_TRUE(s->take().overflowed) << "the bound holds for put-back keys too";
  s->put_back({{}, true});
  EXPECT_TRUE(s->take().overflowed) << "an overflowed take stays overflowed";
}

TEST(tracked_store, ExportKeysReadsRowsWithoutCreatingOrCounting) {
  auto s = tracked(10);
  ASSERT_FALSE(train(*s, {"a"}));
  s->take();
  std::vector<std::string_view> keys{"a", "zz"};
  std::vector<std::string> found, missing;
  ASSERT_FALSE(s->export_keys(
    keys, [&](const row_record& r) { found.emplace_back(r.key); },
    [&](std::string_view k) { missing.emplace_back(k); }));
  EXPECT_EQ(found, std::vector<std::string>{"a"});
  EXPECT_EQ(missing, std::vector<std::string>{"zz"});
  EXPECT_EQ(s->stats().rows, 1u);
  EXPECT_TRUE(s->take().keys.empty());
}

TEST(tracked_store, ReleaseHandsBackTheStoreBelowWithItsRows) {
  auto s = tracked(10, {eviction_kind::lru, 0, 4});
  ASSERT_FALSE(train(*s, {"a"}));
  auto inner = s->release();
  s.reset();
  EXPECT_EQ(inner->stats().rows, 1u);
  // Its evictions no longer reach the tracked store that is gone.
  EXPECT_FALSE(train(*inner, {"b", "c", "d", "e", "f"}, 2));
}

} // namespace
} // namespace darcy::stores
