#include "stores/embedding/write_behind_store.hpp"

#include <malloc.h>

#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "runtime/process/machine.hpp"

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

} // namespace
} // namespace darcy::stores
