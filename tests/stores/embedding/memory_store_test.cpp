#include "stores/embedding/memory_store.hpp"

#include <cmath>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "compute/initializer.hpp"
#include "compute/optimizer.hpp"
#include "compute/rules/rule_registry.hpp"
#include "messages/error.hpp"

namespace darcy::stores {
namespace {

memory_store_options options(size_t dim, optimizer_kind kind = optimizer_kind::adagrad) {
  memory_store_options opts;
  opts.dim = dim;
  opts.optimizer.kind = kind;
  opts.optimizer.learning_rate = 0.05f;
  opts.init.seed = 42;
  return opts;
}

std::unique_ptr<memory_store> make_store(memory_store_options opts) {
  auto store = memory_store::make(std::move(opts));
  EXPECT_TRUE(store) << render(store.error());
  return std::move(*store);
}

std::vector<float> initial(const memory_store_options& opts, std::string_view key) {
  std::vector<float> row(opts.dim);
  compute::initialize_row(opts.init, compute::hash_key(key), row);
  return row;
}

std::vector<float> lookup_one(memory_store& store, std::string_view key) {
  std::vector<float> out(store.dim());
  std::string_view keys[] = {key};
  EXPECT_FALSE(store.lookup(keys, out));
  return out;
}

TEST(memory_store, LookupCreatesRowsFromTheInitializerAndReturnsThemAgain) {
  auto opts = options(4);
  auto store = make_store(opts);
  std::string_view keys[] = {"apple", "pear", "apple"};
  std::vector<float> out(12);
  ASSERT_FALSE(store->lookup(keys, out));
  EXPECT_EQ(store->size(), 2u);
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 4), initial(opts, "apple"));
  EXPECT_EQ(std::vector<float>(out.begin() + 4, out.begin() + 8), initial(opts, "pear"));
  EXPECT_EQ(std::vector<float>(out.begin() + 8, out.end()), initial(opts, "apple"));
  EXPECT_EQ(store->find("apple")->meta->frequency, 2u);
}

uint64_t colliding_hash(std::string_view) {
  return 7;
}

TEST(memory_store, CollidingHashesResolveByTheFullKey) {
  auto opts = options(2);
  opts.hash = colliding_hash;
  auto store = make_store(opts);
  for (int i = 0; i < 300; ++i) {
    auto r = store->find_or_insert("k" + std::to_string(i));
    r.values[0] = static_cast<float>(i);
  }
  for (int i = 0; i < 300; i += 2)
    ASSERT_TRUE(store->erase("k" + std::to_string(i)));
  for (int i = 0; i < 300; ++i) {
    auto r = store->find("k" + std::to_string(i));
    ASSERT_EQ(r.has_value(), i % 2 == 1) << i;
    if (r) {
      EXPECT_EQ(r->values[0], static_cast<float>(i));
    }
  }
}

TEST(memory_store, LocateAnswersFindsRowNumbersForABatchAndCountsNothing) {
  // Batches longer than the probe's look-ahead, with keys inline and in the arena, repeated
  // and absent; and a store whose hash is not hash_key, which locate must not trust.
  struct test_case {
    const char* name;
    bool colliding;
    size_t stored;
  };
  const test_case cases[] = {{"hash_key", false, 200}, {"colliding hash", true, 60}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto opts = options(2);
    if (c.colliding)
      opts.hash = colliding_hash;
    auto store = make_store(opts);
    std::vector<std::string> keys;
    for (size_t i = 0; i < c.stored; ++i) {
      keys.push_back(i % 3 == 0 ? "a key longer than the inline bytes " + std::to_string(i)
                                : "k" + std::to_string(i));
      if (i % 4 != 1)
        store->find_or_insert(keys.back());
    }
    keys.push_back(keys[0]);
    keys.push_back("never stored");
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<uint64_t> hashes;
    for (auto key : views)
      hashes.push_back(compute::hash_key(key));
    std::vector<uint32_t> rows(views.size(), 0);
    store->locate(views, hashes, rows);
    for (size_t k = 0; k < views.size(); ++k) {
      auto r = store->find(views[k]);
      ASSERT_EQ(rows[k], r ? r->index : memory_store::no_row) << views[k];
      if (r) {
        EXPECT_EQ(r->meta->frequency, 0u) << views[k];
      }
    }
    EXPECT_EQ(rows.back(), memory_store::no_row);
    EXPECT_EQ(rows[views.size() - 2], rows[0]);
  }
}

TEST(memory_store, SameHashKeysDifferingInAnyOneByteAreTheirOwnRows) {
  // Every key has the same hash, so only the key comparison tells them apart: keys of 0 to 17
  // bytes (inline and in the arena), and for each a copy that differs in each single byte.
  auto opts = options(1);
  opts.hash = colliding_hash;
  auto store = make_store(opts);
  std::vector<std::string> keys;
  for (size_t n = 0; n <= 17; ++n) {
    std::string base(n, 'a');
    for (size_t i = 0; i < n; ++i)
      base[i] = static_cast<char>('a' + (i * 7 + n) % 26);
    keys.push_back(base);
    for (size_t i = 0; i < n; ++i) {
      auto changed = base;
      changed[i] = '#';
      keys.push_back(changed);
    }
  }
  for (size_t k = 0; k < keys.size(); ++k)
    store->find_or_insert(keys[k]).values[0] = static_cast<float>(k);
  EXPECT_EQ(store->size(), keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    auto r = store->find(keys[k]);
    ASSERT_TRUE(r) << k;
    EXPECT_EQ(r->values[0], static_cast<float>(k)) << keys[k];
  }
}

TEST(memory_store, KeysInlineOrInTheArenaAreTheirOwnRows) {
  // Keys at and around the inline limit (14 bytes), sharing prefixes, with NUL bytes, empty,
  // and 64 KiB long: each is one row, found again by lookup and by the hashed lookup.
  std::vector<std::string> keys = {"",
                                   std::string(1, '\0'),
                                   std::string("a\0b", 3),
                                   std::string(14, 'x'),
                                   std::string(15, 'x'),
                                   std::string(13, 'x') + "y",
                                   std::string(14, 'x') + "y",
                                   std::string(65536, 'k'),
                                   std::string(65535, 'k') + "l"};
  auto opts = options(2);
  auto store = make_store(opts);
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<uint64_t> hashes;
  for (auto& k : keys)
    hashes.push_back(compute::hash_key(k));
  std::vector<float> first(keys.size() * 2), second(keys.size() * 2);
  ASSERT_FALSE(store->lookup(views, first));
  EXPECT_EQ(store->size(), keys.size());
  ASSERT_FALSE(store->lookup(views, hashes, second));
  EXPECT_EQ(first, second);
  for (size_t k = 0; k < keys.size(); ++k) {
    SCOPED_TRACE(k);
    auto r = store->find(keys[k]);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->key, keys[k]);
    EXPECT_EQ(r->meta->frequency, 2u);
    EXPECT_EQ(std::vector<float>(r->values.begin(), r->values.end()), initial(opts, keys[k]));
  }
  ASSERT_TRUE(store->erase(keys[3]));
  EXPECT_FALSE(store->find(keys[3]));
  EXPECT_TRUE(store->find(keys[4]));
}

TEST(memory_store, GrowsAndErasesWithoutLosingKeys) {
  auto opts = options(3);
  auto store = make_store(opts);
  const int n = 100000;
  for (int i = 0; i < n; ++i)
    store->find_or_insert("key-" + std::to_string(i)).values[2] = static_cast<float>(i);
  for (int i = 0; i < n; i += 3)
    ASSERT_TRUE(store->erase("key-" + std::to_string(i)));
  EXPECT_FALSE(store->erase("key-0"));
  // Erased rows are reused by new keys.
  for (int i = 0; i < 1000; ++i)
    store->find_or_insert("new-" + std::to_string(i));
  EXPECT_EQ(store->size(), static_cast<size_t>(n - (n + 2) / 3 + 1000));
  for (int i = 0; i < n; ++i) {
    auto r = store->find("key-" + std::to_string(i));
    ASSERT_EQ(r.has_value(), i % 3 != 0) << i;
    if (r) {
      EXPECT_EQ(r->values[2], static_cast<float>(i));
      EXPECT_EQ(r->key, "key-" + std::to_string(i));
    }
  }
}

TEST(memory_store, UpdatesFollowEachOptimizerRowByRow) {
  for (auto kind : {optimizer_kind::sgd, optimizer_kind::adagrad, optimizer_kind::momentum,
                    optimizer_kind::adam, optimizer_kind::ftrl}) {
    auto opts = options(4, kind);
    auto store = make_store(opts);
    // Reference: one row and one slot vector per key, updated with the optimizer directly.
    struct ref_row {
      std::vector<float> values, slots;
      uint64_t step = 0;
    };
    std::map<std::string, ref_row> reference;
    // Batches of 1 to 60 keys drawn from 40, so that a key repeats within a batch and the
    // store's prefetch pipeline (16 keys ahead) meets rows created earlier in the same batch;
    // every other batch carries its hashes.
    std::mt19937 rng{5};
    std::uniform_int_distribution<int> pick{0, 39}, length{1, 60};
    std::normal_distribution<float> noise{0, 1};
    for (int step = 0; step < 200; ++step) {
      std::vector<std::string> batch(static_cast<size_t>(length(rng)));
      for (auto& key : batch)
        key = "w" + std::to_string(pick(rng));
      std::vector<std::string_view> keys(batch.begin(), batch.end());
      std::vector<uint64_t> hashes;
      for (auto& key : batch)
        hashes.push_back(compute::hash_key(key));
      std::vector<float> grads(keys.size() * 4);
      for (auto& g : grads)
        g = noise(rng);
      if (step % 2 == 0)
        ASSERT_FALSE(store->update(keys, grads, step));
      else
        ASSERT_FALSE(store->update(keys, hashes, grads, step));
      for (size_t k = 0; k < keys.size(); ++k) {
        auto [it, fresh] = reference.try_emplace(batch[k]);
        auto& r = it->second;
        if (fresh) {
          r.values = initial(opts, batch[k]);
          r.slots.resize(compute::slot_count(opts.optimizer) * 4);
          compute::init_slots(opts.optimizer, r.slots);
        }
        compute::apply_gradient(opts.optimizer, r.values, r.slots,
                                std::span<const float>{grads}.subspan(k * 4, 4), r.step);
      }
    }
    for (auto& [key, r] : reference) {
      auto row = store->find(key);
      ASSERT_TRUE(row) << key;
      for (size_t i = 0; i < 4; ++i)
        EXPECT_FLOAT_EQ(row->values[i], r.values[i]) << to_string(kind) << " " << key;
      EXPECT_EQ(row->meta->updates, r.step);
    }
  }
}

TEST(memory_store, BadInputIsRefusedWithoutChangingAnyRow) {
  auto opts = options(2);
  auto store = make_store(opts);
  auto before = lookup_one(*store, "a");
  std::string_view keys[] = {"a", "b"};
  struct row {
    const char* name;
    std::vector<float> grads;
    errc expected;
  } rows[] = {
    {"nan", {0.1f, 0.1f, NAN, 0.1f}, errc::non_finite},
    {"inf", {INFINITY, 0.1f, 0.1f, 0.1f}, errc::non_finite},
    {"too_short", {0.1f, 0.1f, 0.1f}, errc::dimension_mismatch},
  };
  for (auto& r : rows) {
    auto err = store->update(keys, r.grads, 1);
    EXPECT_TRUE(is(err, r.expected)) << r.name << ": " << render(err);
  }
  EXPECT_EQ(lookup_one(*store, "a"), before);
  EXPECT_FALSE(store->find("b")) << "a refused update must not create rows";
  std::vector<float> wrong(3);
  std::string_view one[] = {"a"};
  EXPECT_TRUE(is(store->lookup(one, wrong), errc::dimension_mismatch));
}

TEST(memory_store, ReadOnlyStoreServesInitialVectorsWithoutGrowing) {
  auto opts = options(3);
  opts.read_only = true;
  auto store = make_store(opts);
  EXPECT_EQ(lookup_one(*store, "unseen"), initial(opts, "unseen"));
  EXPECT_EQ(store->size(), 0u);
  std::string_view keys[] = {"unseen"};
  std::vector<float> grads(3, 0.5f);
  EXPECT_TRUE(is(store->update(keys, grads, 1), errc::read_only));
}

TEST(memory_store, InvalidOptionsAreRefused) {
  auto zero_dim = options(0);
  EXPECT_TRUE(is(error_of(memory_store::make(zero_dim)), errc::invalid_config));
  auto bad_lr = options(4);
  bad_lr.optimizer.learning_rate = -1;
  EXPECT_TRUE(is(error_of(memory_store::make(bad_lr)), errc::invalid_config));
}

TEST(memory_store, BytesPerRowStayWithin30PercentOfRaw) {
  auto store = make_store(options(64));
  for (int i = 0; i < 50000; ++i)
    store->find_or_insert("token-" + std::to_string(i));
  auto s = store->stats();
  EXPECT_EQ(s.rows, 50000u);
  EXPECT_GT(s.bytes, s.raw_bytes);
  EXPECT_LE(static_cast<double>(s.bytes) / s.raw_bytes, 1.3)
    << s.bytes << " bytes for " << s.raw_bytes << " raw";
}

TEST(memory_store, InsertsAndErasesAsACacheKeepTheKeyArenaBounded) {
  auto store = make_store(options(4));
  auto key = [](int i) { return "token-" + std::to_string(1'000'000 + i); };
  for (int i = 0; i < 1000; ++i)
    store->find_or_insert(key(i));
  auto full = store->stats().bytes;
  // 200,000 keys pass through a window of 1,000: 2.8 MB of keys in all.
  for (int i = 1000; i < 200'000; ++i) {
    store->find_or_insert(key(i));
    ASSERT_TRUE(store->erase(key(i - 1000)));
  }
  EXPECT_EQ(store->size(), 1000u);
  EXPECT_LE(store->stats().bytes, full + (64 << 10));
  for (int i = 199'000; i < 200'000; ++i)
    ASSERT_EQ(store->find(key(i))->key, key(i)) << "keys moved by the compaction";
}

TEST(memory_store, ShrinkMovesTheRowsOfTheChunksItGivesBackAndKeepsEveryRowFindable) {
  // Rows of dim 16 with Adagrad's slots: 192-byte blocks, 10,922 to a 2 MiB chunk.
  struct {
    const char* name;
    size_t keep_rows;
    bool gives_back;
  } cases[] = {
    {"down to the rows it holds", 0, true},
    {"down to a budget above them", 60'000, true},
    {"a budget the storage fits already", 200'000, false},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto store = make_store(options(16));
    auto key = [](int i) {
      return "key-" + std::to_string(i) + (i % 2 ? "-long-enough-for-the-arena" : "");
    };
    const int n = 150'000;
    for (int i = 0; i < n; ++i) {
      auto r = store->find_or_insert(key(i));
      r.values[0] = static_cast<float>(i);
      r.slots[15] = static_cast<float>(-i);
    }
    // Three in four erased, spread over every chunk.
    for (int i = 0; i < n; ++i) {
      if (i % 4 != 0) {
        ASSERT_TRUE(store->erase(key(i)));
      }
    }
    auto before = store->stats().bytes;
    auto slots_before = store->row_slots();
    std::map<uint32_t, uint32_t> moves;
    auto moved = store->shrink(c.keep_rows, [&](uint32_t from, uint32_t to) {
      EXPECT_TRUE(moves.emplace(from, to).second) << "row " << from << " moved twice";
      EXPECT_LT(to, from);
    });
    EXPECT_EQ(moved, moves.size());
    EXPECT_EQ(store->size(), static_cast<size_t>(n / 4));
    if (c.gives_back) {
      EXPECT_GT(moved, 0u);
      EXPECT_LT(store->row_slots(), slots_before);
      EXPECT_LT(store->stats().bytes, before * 2 / 3);
    } else {
      EXPECT_EQ(moved, 0u);
      EXPECT_EQ(store->row_slots(), slots_before);
    }
    auto bound = std::max<size_t>(c.keep_rows, n / 4);
    if (c.gives_back) {
      EXPECT_LT(store->row_slots(), bound + 10'922) << "the chunks that hold them, no more";
    }
    std::vector<bool> taken(store->row_slots());
    for (int i = 0; i < n; i += 4) {
      auto r = store->find(key(i));
      ASSERT_TRUE(r) << key(i);
      EXPECT_EQ(r->key, key(i));
      EXPECT_EQ(r->values[0], static_cast<float>(i));
      EXPECT_EQ(r->slots[15], static_cast<float>(-i));
      ASSERT_LT(r->index, store->row_slots());
      EXPECT_FALSE(taken[r->index]) << "two rows share row " << r->index;
      taken[r->index] = true;
    }
    // Rows created after the shrink take the free rows, and none overwrites a kept row.
    for (int i = n; i < n + 20'000; ++i)
      store->find_or_insert(key(i)).values[0] = static_cast<float>(i);
    for (int i = 0; i < n + 20'000; i += i < n ? 4 : 1)
      ASSERT_EQ(store->find(key(i))->values[0], static_cast<float>(i)) << key(i);
  }
}

} // namespace
} // namespace darcy::stores

namespace darcy::stores {
namespace {

TEST(memory_store_policies, UnadmittedKeysReadInitialVectorsAndDropGradients) {
  auto opts = options(2);
  opts.admission = {admission_kind::frequency, 3};
  auto store = make_store(opts);
  std::string_view keys[] = {"rare"};
  std::vector<float> grads{1.0f, 1.0f};
  for (int sighting = 1; sighting <= 2; ++sighting) {
    EXPECT_EQ(lookup_one(*store, "rare"), initial(opts, "rare"));
    ASSERT_FALSE(store->update(keys, grads, sighting));
    EXPECT_EQ(store->size(), 0u) << "sighting " << sighting;
  }
  EXPECT_EQ(store->stats().dropped_updates, 2u);
  lookup_one(*store, "rare");
  ASSERT_EQ(store->size(), 1u) << "the third sighting admits the key";
  ASSERT_FALSE(store->update(keys, grads, 3));
  EXPECT_NE(lookup_one(*store, "rare"), initial(opts, "rare"));
}

TEST(memory_store_policies, TtlEvictsRowsNotUpdatedForTooManySteps) {
  auto opts = options(1);
  opts.eviction = {eviction_kind::ttl, 10, 0};
  auto store = make_store(opts);
  std::vector<float> g{0.1f};
  auto touch = [&](std::string_view key, int64_t step) {
    std::string_view keys[] = {key};
    ASSERT_FALSE(store->update(keys, g, step));
  };
  touch("old", 0);
  touch("recent", 15);
  touch("now", 20);
  EXPECT_FALSE(store->find("old")) << "20 - 0 > 10";
  EXPECT_TRUE(store->find("recent"));
  EXPECT_TRUE(store->find("now"));
  EXPECT_EQ(store->stats().evictions, 1u);
}

struct capacity_case {
  const char* name;
  eviction_kind kind;
};

class capacity_eviction : public ::testing::TestWithParam<capacity_case> {};

TEST_P(capacity_eviction, KeepsAtMostMaxRowsAndEvictsTheColdestFirst) {
  auto opts = options(2);
  opts.eviction = {GetParam().kind, 0, 100};
  auto store = make_store(opts);
  // 60 hot keys, looked up often and recently; then 200 cold keys, once each, in between.
  for (int i = 0; i < 60; ++i)
    for (int r = 0; r < 3; ++r)
      lookup_one(*store, "hot-" + std::to_string(i));
  for (int i = 0; i < 200; ++i) {
    lookup_one(*store, "cold-" + std::to_string(i));
    ASSERT_LE(store->size(), 100u);
    if (i % 10 == 0)
      for (int h = 0; h < 60; ++h)
        lookup_one(*store, "hot-" + std::to_string(h));
  }
  for (int i = 0; i < 60; ++i)
    EXPECT_TRUE(store->find("hot-" + std::to_string(i))) << GetParam().name << " hot-" << i;
  EXPECT_GE(store->stats().evictions, 160u);
  // Every surviving key still maps to its own row after the arena was compacted.
  store->for_each([&](const row_ref& r) {
    EXPECT_EQ(store->find(r.key)->values.data(), r.values.data()) << r.key;
  });
}

INSTANTIATE_TEST_SUITE_P(policies, capacity_eviction,
                         ::testing::Values(capacity_case{"lfu", eviction_kind::lfu},
                                           capacity_case{"lru", eviction_kind::lru}),
                         [](const auto& info) { return std::string{info.param.name}; });

TEST(memory_store_policies, InvalidEvictionConfigIsRefused) {
  auto ttl = options(2);
  ttl.eviction = {eviction_kind::ttl, 0, 0};
  EXPECT_TRUE(is(error_of(memory_store::make(ttl)), errc::invalid_config));
  auto lru = options(2);
  lru.eviction = {eviction_kind::lru, 0, 0};
  EXPECT_TRUE(is(error_of(memory_store::make(lru)), errc::invalid_config));
}

} // namespace
} // namespace darcy::stores

namespace darcy::stores {
namespace {

/// Halves a row each time a training lookup reads it, and applies SGD at rate 1.
class halving_rule final : public compute::update_rule {
public:
  std::string_view name() const override { return "test_halving_on_lookup"; }
  std::vector<compute::rule_param> params() const override { return {}; }
  void update(const compute::rule_context& c,
              std::span<const compute::row_update> rows) const override {
    for (auto& r : rows)
      for (size_t i = 0; i < c.dim; ++i)
        r.values[i] -= r.grad[i];
  }
  bool reacts_on_lookup() const override { return true; }
  void on_lookup(const compute::rule_context& c,
                 std::span<const compute::row_lookup> rows) const override {
    for (auto& r : rows)
      for (size_t i = 0; i < c.dim; ++i)
        r.values[i] *= 0.5f;
  }
};

TEST(memory_store, ARuleThatReactsOnLookupChangesTheRowsATrainingLookupReads) {
  auto& registry = compute::rule_registry::global();
  if (!registry.find("test_halving_on_lookup")) {
    ASSERT_FALSE(registry.add(std::make_shared<halving_rule>()));
  }
  auto opts = options(2);
  opts.optimizer.rule = "test_halving_on_lookup";
  opts.init.kind = init_kind::zeros;
  auto store = make_store(opts);
  std::string_view keys[] = {"k"};
  const float grad[] = {-8, 4};
  ASSERT_FALSE(store->update(keys, grad, 1));
  // Counted once, read after the reaction: (8, -4) halved.
  EXPECT_EQ(lookup_one(*store, "k"), (std::vector<float>{4, -2}));
  EXPECT_EQ(lookup_one(*store, "k"), (std::vector<float>{2, -1}));
  // A read that counts nothing (a sampled negative's) leaves the row as it is.
  std::vector<float> out(2);
  const uint32_t counts[] = {0};
  const uint64_t hashes[] = {compute::hash_key("k")};
  ASSERT_FALSE(store->lookup(keys, hashes, counts, out));
  EXPECT_EQ(out, (std::vector<float>{2, -1}));
  EXPECT_EQ(store->find("k")->values[0], 2.0f);
}

} // namespace
} // namespace darcy::stores
