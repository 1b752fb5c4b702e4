#include "stores/embedding/write_behind_store.hpp"

#include <malloc.h>

#include <algorithm>
#include <deque>
#include <iostream>
#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "compute/hash.hpp"
#include "messages/error.hpp"
#include "runtime/process/machine.hpp"
#include "stores/embedding/de_config.hpp"
#include "stores/embedding/leveldb_store.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

/// A backend that keeps nothing: evicted rows are dropped, so the process's memory growth is
/// the cache's alone.
class forgetting_store : public write_behind_store {
public:
  static std::unique_ptr<forgetting_store> make(const de_config& cfg) {
    auto cache = make_cache(cfg);
    EXPECT_TRUE(cache);
    std::unique_ptr<forgetting_store> store{new forgetting_store(cfg, std::move(*cache))};
    EXPECT_FALSE(store->start_admission());
    return store;
  }
  caf::error export_rows(const std::function<void(const row_record&)>&) override { return {}; }
  caf::error import_row(const row_record&) override { return {}; }
  using write_behind_store::oldest;
  using write_behind_store::reserve;
  /// The values of a cached row; empty when the key is not cached.
  std::vector<float> cached_values(std::string_view key) {
    auto row = cache_->find(key);
    return row ? std::vector<float>(row->values.begin(), row->values.end()) : std::vector<float>{};
  }

private:
  using write_behind_store::write_behind_store;

  caf::error load(std::span<const std::string_view> keys, bool create,
                  std::span<uint32_t> rows) override {
    for (size_t k = 0; k < keys.size(); ++k) {
      rows[k] = row_of(keys[k]);
      if (rows[k] != none) {
        ++tier_hits_;
        touch_row(rows[k], keys[k], false, {});
      } else {
        ++tier_misses_;
        if (create && (rows[k] = create_row(keys[k])) != none) {
          ++rows_;
          touch_row(rows[k], keys[k], true, {});
        }
      }
    }
    return {};
  }
  caf::error settle() override {
    for (auto& key : oldest(capacity_))
      forget(key);
    return {};
  }
};

de_config config(uint64_t cache_bytes) {
  de_config cfg;
  cfg.name = "items";
  cfg.dim = 16;
  cfg.optimizer = {optimizer_kind::adagrad, 0.1f};
  cfg.cache_bytes = cache_bytes;
  return cfg;
}

/// Looks up (creating) `count` keys made by `key_of`, 256 a batch.
template <class KeyOf>
void fill(write_behind_store& store, size_t count, KeyOf key_of) {
  std::vector<std::string> keys;
  std::vector<float> out;
  for (size_t i = 0; i < count; i += 256) {
    keys.clear();
    for (size_t k = i; k < std::min(count, i + 256); ++k)
      keys.push_back(key_of(k));
    std::vector<std::string_view> views(keys.begin(), keys.end());
    out.resize(keys.size() * store.dim());
    ASSERT_FALSE(store.lookup(views, out));
  }
}

TEST(write_behind_store, ARowTouchedAmongTheNewestEighthOfALargeTierStaysInPlace) {
  // Rows 0..n-1 looked up in order, then row 0 (the oldest) and row n-2 (among the newest).
  struct {
    const char* name;
    uint64_t cache_bytes;
    bool exact;
  } cases[] = {
    {"a tier of fewer than 4,096 rows keeps exact recency", 256 << 10, true},
    {"a larger tier leaves the newest eighth in place", 8 << 20, false},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto store = forgetting_store::make(config(c.cache_bytes));
    auto n = store->cache_capacity() - 8;
    ASSERT_EQ(n + 8 >= 4096, !c.exact);
    auto key_of = [](size_t i) { return "k" + std::to_string(i); };
    fill(*store, n, key_of);
    fill(*store, 1, [&](size_t) { return key_of(0); });
    fill(*store, 1, [&](size_t) { return key_of(n - 2); });
    auto order = store->oldest(0); // oldest first
    ASSERT_EQ(order.size(), n);
    EXPECT_EQ(order.front(), key_of(1)) << "row 0, touched, left the oldest end";
    EXPECT_EQ(order.back(), c.exact ? key_of(n - 2) : key_of(0));
    EXPECT_EQ(order[n - 2], c.exact ? key_of(0) : key_of(n - 1));
  }
}

TEST(write_behind_store, TheMemoryTierStaysWithinItsBudgetAsCountedAndAsResident) {
  constexpr uint64_t budget = 24 << 20;
  constexpr uint64_t chunk = 2 << 20;
  struct {
    const char* name;
    std::string (*key_of)(size_t);
  } cases[] = {
    {"8-byte keys", [](size_t i) { return std::to_string(10'000'000 + i); }},
    {"40-byte keys",
     [](size_t i) { return std::string(32, 'x') + std::to_string(10'000'000 + i); }},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    ::malloc_trim(0); // the previous case's memory goes back to the system
    auto before = runtime::resident_bytes();
    auto store = forgetting_store::make(config(budget));
    auto short_capacity = store->cache_capacity();
    fill(*store, 4 * short_capacity, c.key_of);
    auto s = store->stats();
    EXPECT_EQ(s.rows, 4 * short_capacity);
    EXPECT_NEAR(double(s.cached_rows), double(store->cache_capacity()), 0.01 * s.cached_rows)
      << "the cache is full";
    EXPECT_EQ(s.tier_misses, 4 * short_capacity);
    EXPECT_LE(s.bytes, budget + chunk) << "counted";
    EXPECT_GE(s.bytes, budget / 2) << "the budget is used";
    // Resident memory also holds what the allocator keeps of freed blocks (the index's earlier
    // arrays, the key arena before a compaction, the batches' key copies), which the store
    // cannot count: up to half as much again with long keys.
    auto grown = runtime::resident_bytes() - before;
    EXPECT_LE(grown, s.bytes * 3 / 2 + chunk) << "resident: the count does not understate";
    // A row's bytes in memory against its raw bytes (key, values, slots).
    std::cout << c.name << ": " << store->cache_capacity() << " rows in " << s.bytes
              << " counted bytes, " << grown << " resident; " << double(s.bytes) / s.cached_rows
              << " bytes a row, raw " << double(s.raw_bytes) / s.cached_rows << "\n";
    // Hits: the newest rows are cached.
    fill(*store, 256, [&](size_t i) { return c.key_of(4 * short_capacity - 1 - i); });
    EXPECT_EQ(store->stats().tier_hits, 256u);
  }
}

TEST(write_behind_store, ATierWhoseBudgetFallsGivesItsMemoryBackAndKeepsItsNewestRowsInOrder) {
  constexpr uint64_t budget = 24 << 20;
  constexpr uint64_t chunk = 2 << 20;
  auto store = forgetting_store::make(config(budget));
  auto key_of = [](size_t i) { return "k" + std::to_string(i); };
  auto full = store->cache_capacity();
  fill(*store, 2 * full, key_of);
  auto order = store->oldest(0); // oldest first
  ASSERT_EQ(order.size(), store->cache_capacity());
  std::map<std::string, std::vector<float>> values;
  for (auto& key : order)
    values[key] = store->cached_values(key);
  auto counted = store->stats().bytes;
  ASSERT_LE(counted, budget + chunk);
  // The backend takes half the budget (as a growing pointer index does): the rows' storage,
  // the index and the entries must come down with the rows, not stay at their high-water mark.
  store->reserve(budget / 2);
  constexpr size_t fresh = 256;
  fill(*store, fresh, [&](size_t i) { return key_of(2 * full + i); });
  auto s = store->stats();
  EXPECT_LE(s.bytes, budget / 2 + chunk) << "counted, against " << counted << " before";
  EXPECT_LE(s.cached_rows, store->cache_capacity());
  auto now = store->oldest(0);
  ASSERT_EQ(now.size(), s.cached_rows);
  ASSERT_GT(now.size(), fresh);
  auto kept = now.size() - fresh;
  EXPECT_EQ(std::vector<std::string>(now.begin(), now.begin() + kept),
            std::vector<std::string>(order.end() - kept, order.end()))
    << "the newest rows stay, in their order";
  for (size_t i = 0; i < fresh; ++i)
    EXPECT_EQ(now[kept + i], key_of(2 * full + i));
  for (size_t i = 0; i < kept; ++i)
    ASSERT_EQ(store->cached_values(now[i]), values[now[i]]) << now[i];
  auto hits = s.tier_hits;
  fill(*store, kept, [&](size_t i) { return now[i]; });
  EXPECT_EQ(store->stats().tier_hits, hits + kept) << "every kept row is found where it moved";
}

// The look-ahead (prefetch) on the LevelDB backend, at the smallest cache (16 rows, so at most
// 8 pinned): the store's tier against a memory store that never prefetches.
class prefetch_test : public ::testing::Test {
protected:
  de_config tiered(const std::string& sub) {
    de_config cfg;
    cfg.name = "items";
    cfg.dim = 4;
    cfg.optimizer = {optimizer_kind::adagrad, 0.1f};
    cfg.backend = backend_kind::leveldb;
    cfg.path = dir.path() + "/" + sub;
    cfg.cache_bytes = 1;
    return cfg;
  }
  std::unique_ptr<embedding_store> make(de_config cfg) {
    auto store = make_store(cfg);
    EXPECT_TRUE(store) << render(error_of(store));
    return store ? std::move(*store) : nullptr;
  }
  /// Waits for the write-back in flight (and writes the cached rows): the rows it evicted are
  /// then read from disk, not from the batch in memory.
  static void written_back(embedding_store& store) {
    auto* tier = dynamic_cast<leveldb_store*>(&store);
    ASSERT_NE(tier, nullptr);
    ASSERT_FALSE(tier->flush());
  }
  static std::vector<std::string> keys(int first, int count) {
    std::vector<std::string> out;
    for (int k = first; k < first + count; ++k)
      out.push_back("key" + std::to_string(k));
    return out;
  }
  static std::vector<float> lookup(embedding_store& store, const std::vector<std::string>& keys) {
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<float> out(keys.size() * store.dim());
    EXPECT_FALSE(store.lookup(views, out));
    return out;
  }
  static void update(embedding_store& store, const std::vector<std::string>& keys, float g,
                     int64_t step) {
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<float> grads(keys.size() * store.dim(), g);
    EXPECT_FALSE(store.update(views, grads, step));
  }
  static caf::error prefetch(embedding_store& store, const std::vector<std::string>& keys) {
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<uint64_t> hashes;
    for (auto& k : keys)
      hashes.push_back(compute::hash_key(k));
    return store.prefetch(views, hashes);
  }
  static std::map<std::string, std::vector<float>> rows_of(embedding_store& store) {
    std::map<std::string, std::vector<float>> rows;
    EXPECT_FALSE(store.export_rows([&](const row_record& r) {
      auto& row = rows[std::string{r.key}];
      row.assign(r.values.begin(), r.values.end());
      row.insert(row.end(), r.slots.begin(), r.slots.end());
      row.push_back(static_cast<float>(r.updates));
      row.push_back(static_cast<float>(r.frequency));
    }));
    return rows;
  }

  test::temp_dir dir{"write_behind_prefetch"};
};

TEST_F(prefetch_test, PrefetchedRowsAreHitsAtTheirLookupThoughTheCacheTurnedOverMeanwhile) {
  auto store = make(tiered("hits"));
  for (int k = 0; k < 100; k += 10) // 100 rows on disk, the last 16 in memory
    update(*store, keys(k, 10), 0.5f, 1);
  auto before = store->stats();
  auto ahead = keys(0, 8);
  ASSERT_FALSE(prefetch(*store, ahead));
  auto after = store->stats();
  EXPECT_EQ(after.prefetched_rows, 8u) << "the 8 oldest rows were on disk only";
  EXPECT_EQ(after.disk_reads, before.disk_reads + 8);
  EXPECT_EQ(after.tier_hits, before.tier_hits) << "a prefetch is not a lookup";
  EXPECT_EQ(after.tier_misses, before.tier_misses);
  EXPECT_EQ(after.rows, 100u);
  // Two cachefuls of other rows pass through the cache before the batch's lookup.
  for (int k = 40; k < 72; k += 8)
    lookup(*store, keys(k, 8));
  auto hits = store->stats().tier_hits;
  lookup(*store, ahead);
  EXPECT_EQ(store->stats().tier_hits, hits + 8) << "pinned until their lookup";
}

TEST_F(prefetch_test, PrefetchCreatesNoRowAndPinsAtMostHalfTheCache) {
  auto store = make(tiered("bounded"));
  update(*store, keys(0, 40), 0.5f, 1);
  written_back(*store);
  auto before = store->stats();
  ASSERT_FALSE(prefetch(*store, keys(1000, 4))) << "keys never stored";
  EXPECT_EQ(store->stats().rows, before.rows);
  EXPECT_EQ(store->stats().prefetched_rows, 0u);
  ASSERT_FALSE(prefetch(*store, keys(0, 20)));
  EXPECT_EQ(store->stats().prefetched_rows, 8u) << "half of 16 rows pinned, the rest passed over";
  ASSERT_FALSE(prefetch(*store, keys(20, 4)));
  EXPECT_EQ(store->stats().prefetched_rows, 8u) << "no room until a lookup releases a pin";
  lookup(*store, keys(0, 8));
  ASSERT_FALSE(prefetch(*store, keys(20, 4)));
  EXPECT_EQ(store->stats().prefetched_rows, 12u);
}

TEST_F(prefetch_test, PinsNeverLookedUpLapseAndTheCacheReturnsToItsBudget) {
  auto store = make(tiered("lapse"));
  update(*store, keys(0, 40), 0.5f, 1);
  written_back(*store);
  ASSERT_FALSE(prefetch(*store, keys(0, 8)));
  for (uint64_t i = 0; i < embedding_store::pinned_lookups + 20; ++i)
    lookup(*store, keys(100 + int(i % 50), 1));
  auto s = store->stats();
  EXPECT_LE(s.cached_rows, s.cache_capacity);
  ASSERT_FALSE(prefetch(*store, keys(0, 8)));
  EXPECT_EQ(store->stats().prefetched_rows, 16u)
    << "the lapsed rows were evicted as any other, and there is room for 8 pins again";
}

// Prefetches of the next batches interleaved with the lookups and updates of the current one,
// as the look-ahead runs them: every lookup answers what a store that never prefetched
// answers, and no update is lost, whether it lands before or after the prefetch of its row.
TEST_F(prefetch_test, InterleavedWithUpdatesChangesNoValueAndLosesNoUpdate) {
  auto store = make(tiered("interleaved"));
  auto twin_cfg = tiered("unused");
  twin_cfg.backend = backend_kind::memory;
  auto twin = make(twin_cfg);
  std::mt19937 rng{11};
  std::uniform_int_distribution<int> pick{0, 59};
  auto batch = [&] {
    std::vector<std::string> b;
    for (int i = 0; i < 6; ++i)
      b.push_back("key" + std::to_string(pick(rng)));
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    return b;
  };
  std::deque<std::vector<std::string>> window{batch(), batch(), batch()};
  for (int step = 1; step <= 300; ++step) {
    window.push_back(batch());
    if (step % 2 == 0) {
      ASSERT_FALSE(prefetch(*store, window.back()));
    }
    auto now = window.front();
    window.pop_front();
    ASSERT_EQ(lookup(*store, now), lookup(*twin, now)) << "step " << step;
    if (step % 2 == 1) {
      ASSERT_FALSE(prefetch(*store, window.back())) << "between lookup and update";
    }
    update(*store, now, 0.1f * float(step % 7) - 0.3f, step);
    update(*twin, now, 0.1f * float(step % 7) - 0.3f, step);
  }
  EXPECT_GT(store->stats().prefetched_rows, 100u);
  EXPECT_EQ(rows_of(*store), rows_of(*twin)) << "values, slots, update counts, frequencies";
}

TEST_F(prefetch_test, KeysWithoutOneHashEachAreRefusedAndNothingChanges) {
  auto store = make(tiered("bad"));
  update(*store, keys(0, 40), 0.5f, 1);
  auto before = rows_of(*store);
  auto cached = store->stats().cached_rows;
  std::vector<std::string> k = keys(0, 4);
  std::vector<std::string_view> views(k.begin(), k.end());
  std::vector<uint64_t> hashes(3);
  auto err = store->prefetch(views, hashes);
  EXPECT_TRUE(is(err, errc::dimension_mismatch)) << render(err);
  EXPECT_EQ(store->stats().cached_rows, cached);
  EXPECT_EQ(store->stats().prefetched_rows, 0u);
  EXPECT_EQ(rows_of(*store), before);
}

} // namespace
} // namespace darcy::stores
