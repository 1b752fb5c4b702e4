#include "stores/embedding/leveldb_store.hpp"

#include <unistd.h>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>
#include <leveldb/db.h>

#include "messages/error.hpp"
#include "stores/embedding/de_config.hpp"
#include "stores/embedding/row_codec.hpp"
#include "tests/stores/embedding/leveldb_store_fixture.hpp"

namespace darcy::stores {
namespace {

using leveldb_testing::child_process;
using leveldb_testing::leveldb_store_test;
namespace fs = std::filesystem;

TEST_F(leveldb_store_test, AgreesWithTheMemoryStoreThroughATinyCache) {
  // The rules' slots go to disk and back with their rows: a value's worth (Adagrad), one float a
  // row (row-wise Adagrad), and a rule named with its parameters.
  struct rule_case {
    const char* name;
    std::string rule;
    std::vector<rule_value> params;
  };
  const rule_case cases[] = {{"adagrad", "", {}},
                             {"rowwise_adagrad", "rowwise_adagrad", {{"learning_rate", 0.1f}}},
                             {"clipped_adagrad", "clipped_adagrad", {{"clip_norm", 0.5f}}}};
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto cfg = config(std::string{"tiny_"} + c.name, 1);
    cfg.optimizer.rule = c.rule;
    cfg.optimizer.params = c.params;
    auto disk = open(cfg);
    ASSERT_TRUE(disk);
    ASSERT_EQ(disk->cache_capacity(), 16u) << "the smallest cache forces write-backs";
    auto mem = memory_twin(cfg);
    ASSERT_TRUE(mem);
    std::mt19937 rng{3};
    std::vector<std::string> keys;
    for (int step = 0; step < 300; ++step) {
      ASSERT_NO_FATAL_FAILURE(twin_step(*disk, *mem, rng, 200, step, keys));
      ASSERT_LE(disk->cached_rows(), 16u);
    }
    EXPECT_EQ(disk->stats().rows, mem->stats().rows);
    EXPECT_EQ(state_of(*disk), state_of(*mem))
      << "values, rule slots and update counts survive write-back";
  }
}

// Rows beyond the cache are read from the log where the pointer index holds their place, and
// once the table samples, where its sampling index does: every write-back, collection of the
// log and removal must move or drop that place. LevelDB is never asked.
TEST_F(leveldb_store_test, RowsReadWhereTheirPlaceIsKeptInMemoryMatchTheMemoryStore) {
  struct case_t {
    const char* name;
    bool samples;
    int index_tag_bits;
  } cases[] = {
    {"indexed", false, pointer_index::tag_bits},
    // A tag of one bit: most keys of a partition agree with another in the bits kept, and
    // are told apart by the keys their records hold.
    {"indexed by few bits", false, 1},
    {"located", true, pointer_index::tag_bits},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto cfg = config(c.name, 1);
    auto disk = open(cfg, 1, c.index_tag_bits);
    disk->collect_garbage_above(4096);
    auto mem = memory_twin(cfg);
    ASSERT_TRUE(mem);
    std::mt19937 rng{7};
    std::vector<std::string> keys;
    for (int step = 0; step < 400; ++step) {
      if (c.samples && step == 40) {
        ASSERT_TRUE(disk->sample_metadata({}));
        ASSERT_TRUE(mem->sample_metadata({}));
      }
      ASSERT_NO_FATAL_FAILURE(twin_step(*disk, *mem, rng, 150, step, keys));
      if (step % 50 == 49) {
        std::vector<std::string_view> gone{keys.front()};
        ASSERT_FALSE(disk->remove_rows(gone));
        ASSERT_FALSE(mem->remove_rows(gone));
      }
    }
    if (c.samples) {
      EXPECT_GT(disk->located_reads(), 500u) << "reads after the index was built skip LevelDB";
    } else {
      EXPECT_GT(disk->index_reads(), 500u) << "rows written back are read at their places";
      EXPECT_EQ(disk->located_reads(), 0u) << "the table never sampled";
    }
    EXPECT_EQ(disk->db_reads(), 0u);
    EXPECT_GE(disk->log_collections(), 1u) << "collections moved rows whose place was kept";
    EXPECT_EQ(state_of(*disk), state_of(*mem));
  }
}

TEST_F(leveldb_store_test, RowsSurviveClosingAndReopening) {
  auto cfg = config("reopen");
  std::vector<float> before;
  {
    auto store = open(cfg);
    std::vector<std::string_view> keys{"x", "y"};
    std::vector<float> grads(8, 0.3f);
    ASSERT_FALSE(store->update(keys, grads, 1));
    before = lookup(*store, {"x", "y"});
  }
  auto store = open(cfg);
  EXPECT_EQ(store->stats().rows, 2u);
  EXPECT_EQ(lookup(*store, {"x", "y"}), before);
  EXPECT_EQ(store->index_reads(), 2u) << "opening put every row's place in the index";
  EXPECT_EQ(store->db_reads(), 0u);
}

TEST_F(leveldb_store_test, FlushedRowsSurviveASigkill) {
  auto cfg = config("killed");
  child_process child{[&](int says) {
    // The child flushes a trained row, says so, keeps writing without flushing, and waits.
    auto store = leveldb_store::open(cfg);
    if (!store)
      ::_exit(1);
    std::vector<std::string_view> keys{"durable"};
    std::vector<float> grads(4, 1.0f);
    (*store)->update(keys, grads, 1);
    (*store)->flush();
    char ok = '1';
    if (::write(says, &ok, 1) != 1)
      ::_exit(1);
    std::vector<std::string_view> more{"volatile"};
    (*store)->update(more, grads, 2);
    for (;;)
      ::pause();
  }};
  ASSERT_TRUE(child.started());
  char ok = 0;
  ASSERT_EQ(::read(child.reader(), &ok, 1), 1);
  ASSERT_TRUE(child.kill());
  auto store = open(cfg);
  std::vector<float> expected(4);
  {
    auto reference_cfg = cfg;
    reference_cfg.backend = backend_kind::memory;
    auto reference = make_store(reference_cfg);
    std::vector<std::string_view> keys{"durable"};
    std::vector<float> grads(4, 1.0f);
    ASSERT_FALSE((*reference)->update(keys, grads, 1));
    std::vector<float> out(4);
    ASSERT_FALSE((*reference)->lookup(keys, out));
    expected = out;
  }
  EXPECT_EQ(lookup(*store, {"durable"}), expected);
}

TEST_F(leveldb_store_test, DatabaseOfAnotherShapeOrBadConfigIsRefused) {
  auto cfg = config("shape");
  open(cfg);
  auto other = cfg;
  other.dim = 8;
  EXPECT_TRUE(is(error_of(leveldb_store::open(other)), errc::corrupt_file));
  // Another rule's rows keep other slots: row-wise Adagrad's 1 float a row, not Adagrad's 4.
  auto rowwise = cfg;
  rowwise.optimizer.rule = "rowwise_adagrad";
  EXPECT_TRUE(is(error_of(leveldb_store::open(rowwise)), errc::corrupt_file));
  auto no_path = cfg;
  no_path.path.clear();
  EXPECT_TRUE(is(validate(no_path), errc::invalid_config));
  auto evicting = cfg;
  evicting.eviction = {eviction_kind::lru, 0, 10};
  EXPECT_TRUE(is(validate(evicting), errc::invalid_config));
}

TEST_F(leveldb_store_test, AdmissionDropsRareKeys) {
  auto cfg = config("admission");
  cfg.admission = {admission_kind::frequency, 2};
  auto store = open(cfg);
  lookup(*store, {"rare"});
  std::vector<std::string_view> keys{"rare"};
  std::vector<float> grads(4, 1.0f);
  ASSERT_FALSE(store->update(keys, grads, 1));
  EXPECT_EQ(store->stats().rows, 0u);
  EXPECT_EQ(store->stats().dropped_updates, 1u);
  lookup(*store, {"rare"});
  EXPECT_EQ(store->stats().rows, 1u);
}

/// The keys of every row of the table, from its database (both tiers: export flushes first).
std::set<std::string> stored_keys(leveldb_store& store) {
  std::set<std::string> out;
  EXPECT_FALSE(store.export_rows([&](const row_record& r) { out.emplace(r.key); }));
  return out;
}

void update_keys(embedding_store& store, const std::vector<std::string>& keys, int64_t step) {
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<float> grads(keys.size() * store.dim(), 0.5f);
  EXPECT_FALSE(store.update(views, grads, step));
}

TEST_F(leveldb_store_test, TtlRemovesRowsNotUpdatedWithinItsStepsFromBothTiers) {
  auto cfg = config("ttl", 1); // 16 cached rows: most of the old ones are on disk only
  cfg.eviction = {eviction_kind::ttl, 10, 0};
  {
    auto store = open(cfg);
    std::vector<std::string> old;
    for (int i = 0; i < 100; ++i)
      old.push_back("old-" + std::to_string(i));
    update_keys(*store, old, 1);
    EXPECT_EQ(store->stats().rows, 100u);
    for (int64_t step = 2; step <= 40; ++step)
      update_keys(*store, {"live", "step-" + std::to_string(step)}, step);
    // Rows last updated within 10 steps of step 40 stay: live and steps 30..40.
    auto keys = stored_keys(*store);
    EXPECT_EQ(keys.count("live"), 1u);
    EXPECT_EQ(keys.count("step-40"), 1u);
    EXPECT_EQ(keys.count("step-25"), 0u);
    for (auto& k : old)
      EXPECT_EQ(keys.count(k), 0u) << k;
    EXPECT_EQ(store->stats().rows, keys.size());
    EXPECT_LE(keys.size(), 1u + 14u) << "steps within the TTL and one pass period";
    EXPECT_GE(store->stats().evictions, 100u);
  }
  auto again = open(cfg);
  EXPECT_EQ(again->stats().rows, stored_keys(*again).size()) << "the evictions were written";
  EXPECT_EQ(stored_keys(*again).count("old-7"), 0u);
}

TEST_F(leveldb_store_test, LfuKeepsTheMostLookedUpRowsWithinMaxRows) {
  auto cfg = config("lfu", 1);
  cfg.eviction = {eviction_kind::lfu, 0, 100};
  auto store = open(cfg);
  std::vector<std::string> hot;
  for (int i = 0; i < 20; ++i)
    hot.push_back("hot-" + std::to_string(i));
  for (int r = 0; r < 5; ++r)
    lookup(*store, hot);
  for (int b = 0; b < 6; ++b) {
    std::vector<std::string> cold;
    for (int i = 0; i < 50; ++i)
      cold.push_back("cold-" + std::to_string(b * 50 + i));
    lookup(*store, cold);
    EXPECT_LE(store->stats().rows, 100u) << "after batch " << b;
  }
  auto keys = stored_keys(*store);
  EXPECT_LE(keys.size(), 100u);
  EXPECT_EQ(store->stats().rows, keys.size());
  for (auto& k : hot)
    EXPECT_EQ(keys.count(k), 1u) << k << " was looked up 5 times";
  EXPECT_GE(store->stats().evictions, 320u - 100u);
}

TEST_F(leveldb_store_test, ATableOfTenTimesTheCacheReadsBackEveryRowWritten) {
  auto cfg = config("big", 1); // 16 rows in memory
  auto store = open(cfg);
  ASSERT_EQ(store->cache_capacity(), 16u);
  std::mt19937_64 rng{12};
  std::uniform_int_distribution<int> pick{0, 159};
  std::map<std::string, std::vector<float>> expected;
  for (int step = 1; step <= 200; ++step) {
    std::set<std::string> batch;
    for (int i = 0; i < 8; ++i)
      batch.insert("k" + std::to_string(pick(rng)));
    std::vector<std::string> keys(batch.begin(), batch.end());
    auto rows = lookup(*store, keys);
    for (size_t k = 0; k < keys.size(); ++k) {
      std::vector<float> row(rows.begin() + long(k * 4), rows.begin() + long(k * 4 + 4));
      if (auto it = expected.find(keys[k]); it != expected.end()) {
        EXPECT_EQ(row, it->second) << keys[k] << " at step " << step;
      }
    }
    update_keys(*store, keys, step);
    auto after = lookup(*store, keys);
    for (size_t k = 0; k < keys.size(); ++k)
      expected[keys[k]].assign(after.begin() + long(k * 4), after.begin() + long(k * 4 + 4));
  }
  EXPECT_EQ(store->stats().rows, expected.size());
  EXPECT_GE(expected.size(), 10u * 16u) << "ten times the rows the cache holds";
  EXPECT_LE(store->cached_rows(), 16u);
}

TEST_F(leveldb_store_test, ExportKeysReadsRowsBeyondTheCacheByKeyAndCreatesNone) {
  auto cfg = config("export", 1); // 16 rows in memory
  auto store = open(cfg);
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i)
    keys.push_back("k" + std::to_string(i));
  update_keys(*store, keys, 1);
  std::map<std::string, std::vector<float>> all;
  ASSERT_FALSE(store->export_rows([&](const row_record& r) {
    all[std::string{r.key}].assign(r.values.begin(), r.values.end());
  }));
  std::vector<std::string_view> asked{"k3", "k97", "absent", "k50"};
  std::map<std::string, std::vector<float>> got;
  std::vector<std::string> missing;
  ASSERT_FALSE(store->export_keys(
    asked,
    [&](const row_record& r) { got[std::string{r.key}].assign(r.values.begin(), r.values.end()); },
    [&](std::string_view k) { missing.emplace_back(k); }));
  EXPECT_EQ(missing, std::vector<std::string>{"absent"});
  ASSERT_EQ(got.size(), 3u);
  for (auto& [key, values] : got)
    EXPECT_EQ(values, all.at(key)) << key;
  EXPECT_EQ(store->stats().rows, 100u) << "no row was created";
  EXPECT_LE(store->cached_rows(), 16u);
}

// A sync's deletions: rows only in the cache, only on disk, and keys the table never held.
TEST_F(leveldb_store_test, RemovedRowsLeaveBothTiersAndStayGoneAfterReopening) {
  auto cfg = config("remove", 1); // 16 rows in memory
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i)
    keys.push_back("k" + std::to_string(i));
  std::vector<std::string_view> gone{"k0", "k99", "k99", "never", "k42"};
  {
    auto store = open(cfg);
    update_keys(*store, keys, 1);
    EXPECT_FALSE(store->remove_rows({}));
    ASSERT_FALSE(store->remove_rows(gone)) << "k99 was updated last: it is in the cache";
    EXPECT_EQ(store->stats().rows, 97u);
    auto held = stored_keys(*store);
    EXPECT_EQ(held.size(), 97u);
    for (auto* k : {"k0", "k42", "k99", "never"})
      EXPECT_EQ(held.count(k), 0u) << k;
    EXPECT_EQ(held.count("k1"), 1u);
  }
  auto again = open(cfg);
  EXPECT_EQ(again->stats().rows, 97u);
  EXPECT_EQ(stored_keys(*again).count("k0"), 0u);
  EXPECT_EQ(stored_keys(*again).count("k98"), 1u);
}

TEST_F(leveldb_store_test, PastItsBudgetTheCacheWritesBackAThirtySecondOfItAtOnce) {
  auto store = open(config("batched", 1 << 20));
  auto key = [](size_t i) {
    auto digits = std::to_string(i);
    return "k" + std::string(6 - digits.size(), '0') + digits;
  };
  auto oldest = lookup(*store, {key(0)});
  auto capacity = store->cache_capacity();
  ASSERT_GE(capacity, 64u);
  std::vector<std::string> keys;
  for (size_t i = 1; i < capacity; ++i) {
    keys.push_back(key(i));
    if (keys.size() == 100 || i + 1 == capacity) {
      lookup(*store, keys);
      keys.clear();
    }
  }
  EXPECT_EQ(store->cached_rows(), capacity) << "full, and nothing written back yet";
  lookup(*store, {key(capacity)});
  EXPECT_EQ(store->cached_rows(), capacity - capacity / 32);
  EXPECT_EQ(store->stats().rows, capacity + 1);
  EXPECT_EQ(lookup(*store, {key(0)}), oldest) << "the oldest row, written back, reads back";
}

TEST_F(leveldb_store_test, AsItsPointerIndexGrowsTheTierGivesMemoryBackAndStaysWithinItsBudget) {
  constexpr uint64_t budget = 16 << 20;
  constexpr uint64_t chunk = 2 << 20;
  auto cfg = config("growing", budget);
  auto store = open(cfg);
  auto twin = memory_twin(cfg);
  auto first_capacity = store->cache_capacity();
  // A million keys, a thousand a batch: the pointer index grows to about 10 MB of the 16 MiB
  // and the rows' room falls below half of what it was. Every 50th key is also updated, on
  // both stores.
  constexpr int n = 1'000'000;
  std::mt19937 rng{31};
  std::normal_distribution<float> noise{0, 0.5f};
  std::vector<std::string> keys, tracked;
  uint64_t most = 0;
  for (int start = 0; start < n; start += 1000) {
    keys.clear();
    for (int i = start; i < start + 1000; ++i)
      keys.push_back("key" + std::to_string(i));
    lookup(*store, keys);
    std::vector<std::string> some;
    for (int i = start; i < start + 1000; i += 50)
      some.push_back(keys[i - start]);
    lookup(*twin, some);
    std::vector<std::string_view> views(some.begin(), some.end());
    std::vector<float> grads(some.size() * cfg.dim);
    for (auto& g : grads)
      g = noise(rng);
    ASSERT_FALSE(store->update(views, grads, start / 1000 + 1));
    ASSERT_FALSE(twin->update(views, grads, start / 1000 + 1));
    tracked.insert(tracked.end(), some.begin(), some.end());
    most = std::max(most, store->stats().bytes);
  }
  EXPECT_EQ(store->stats().rows, uint64_t{n});
  EXPECT_LT(store->cache_capacity(), first_capacity / 2) << "the index took over half";
  EXPECT_LE(most, budget + chunk) << "counted at the end of any batch";
  // The rows the cache moved into the memory it kept read as the twin's, as do those on disk.
  std::vector<std::string> newest(tracked.end() - 400, tracked.end());
  EXPECT_EQ(lookup(*store, newest), lookup(*twin, newest));
  EXPECT_EQ(lookup(*store, tracked), lookup(*twin, tracked));
}

/// The value-log files in `dir`, by name.
std::set<std::string> log_files(const std::string& dir) {
  std::set<std::string> names;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".vlog")
      names.insert(e.path().filename().string());
  return names;
}

TEST_F(leveldb_store_test, ANewDatabaseKeepsItsRowsInTheValueLogAndOnlyItsFormatInLevelDb) {
  auto cfg = config("separated", 1);
  {
    auto store = open(cfg);
    for (int step = 1; step <= 40; ++step)
      update_keys(*store, {"a" + std::to_string(step), "b" + std::to_string(step)}, step);
    ASSERT_FALSE(store->flush());
    auto log_bytes = fs::file_size(cfg.path + "/values-000001.vlog");
    EXPECT_GE(log_bytes, 80 * row_record_bytes(4, 1)) << "every row's record is in the log";
    EXPECT_GE(store->stats().disk_bytes, log_bytes);
  }
  leveldb::DB* raw = nullptr;
  ASSERT_TRUE(leveldb::DB::Open(leveldb::Options{}, cfg.path, &raw).ok());
  std::unique_ptr<leveldb::DB> db{raw};
  std::string stored;
  EXPECT_TRUE(db->Get(leveldb::ReadOptions{}, "ra7", &stored).IsNotFound());
  ASSERT_TRUE(db->Get(leveldb::ReadOptions{}, "m:format", &stored).ok());
  EXPECT_TRUE(stored.ends_with(";values=log-only")) << stored;
}

// A database written while LevelDB held the rows' pointers: its index is built from them, and
// every write-back and collection keeps them current.
TEST_F(leveldb_store_test, ADatabaseWithItsPointersInLevelDbIsServedAndKeepsThemCurrent) {
  auto cfg = config("pointers", 1);
  std::vector<float> values{1, 2, 3, 4}, slots{0.5f, 0.5f, 0.5f, 0.5f};
  {
    fs::create_directories(cfg.path);
    leveldb::DB* raw = nullptr;
    leveldb::Options options;
    options.create_if_missing = true;
    ASSERT_TRUE(leveldb::DB::Open(options, cfg.path, &raw).ok());
    std::unique_ptr<leveldb::DB> db{raw};
    auto log = value_log::open(cfg.path);
    ASSERT_TRUE(log);
    std::string record;
    append_row_record({"old", values, slots, 3, 2, 9}, record);
    auto at = log->append("old", record);
    ASSERT_FALSE(log->write_out(true));
    ASSERT_TRUE(
      db->Put(leveldb::WriteOptions{}, "m:format", row_format(cfg, cfg.dim) + ";values=log").ok());
    ASSERT_TRUE(db->Put(leveldb::WriteOptions{}, "rold", encode_pointer(at)).ok());
  }
  std::map<std::string, std::vector<float>> expected;
  {
    auto store = open(cfg);
    EXPECT_EQ(store->stats().rows, 1u);
    EXPECT_EQ(lookup(*store, {"old"}), values);
    store->collect_garbage_above(1);
    for (int step = 1; step <= 200; ++step) {
      std::vector<std::string> keys{"old", "k" + std::to_string(step % 40)};
      update_keys(*store, keys, step);
      auto rows = lookup(*store, keys);
      for (size_t k = 0; k < keys.size(); ++k)
        expected[keys[k]].assign(rows.begin() + long(k * 4), rows.begin() + long(k * 4 + 4));
    }
    EXPECT_GE(store->log_collections(), 1u);
    ASSERT_FALSE(store->flush());
  }
  {
    leveldb::DB* raw = nullptr;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options{}, cfg.path, &raw).ok());
    std::unique_ptr<leveldb::DB> db{raw};
    std::string stored;
    value_pointer p;
    ASSERT_TRUE(db->Get(leveldb::ReadOptions{}, "rk7", &stored).ok());
    EXPECT_TRUE(decode_pointer(stored, p)) << "new rows' pointers are in LevelDB too";
  }
  auto store = open(cfg);
  EXPECT_EQ(store->stats().rows, expected.size());
  for (auto& [key, row] : expected) {
    EXPECT_EQ(lookup(*store, {key}), row) << key;
  }
  EXPECT_EQ(store->db_reads(), 0u);
}

TEST_F(leveldb_store_test, ALogThatIsMostlyGarbageIsCollectedAndEveryRowReadsBack) {
  auto cfg = config("collected", 1); // 16 rows in memory: rows are written back over and over
  std::map<std::string, std::vector<float>> expected;
  std::mt19937_64 rng{5};
  std::uniform_int_distribution<int> pick{0, 99};
  uint64_t live_bytes = 100 * value_log::record_length(3, row_record_bytes(4, 1));
  {
    auto store = open(cfg);
    store->collect_garbage_above(4 * live_bytes);
    for (int step = 1; step <= 600; ++step) {
      std::set<std::string> batch;
      for (int i = 0; i < 8; ++i)
        batch.insert("k" + std::to_string(pick(rng)));
      std::vector<std::string> keys(batch.begin(), batch.end());
      update_keys(*store, keys, step);
      auto rows = lookup(*store, keys);
      for (size_t k = 0; k < keys.size(); ++k)
        expected[keys[k]].assign(rows.begin() + long(k * 4), rows.begin() + long(k * 4 + 4));
      // Once collected, the log never holds much more garbage than the threshold allows.
      ASSERT_LE(store->stats().disk_bytes, 12 * live_bytes + (1 << 20)) << "step " << step;
    }
    EXPECT_GE(store->log_collections(), 2u);
    auto files = log_files(cfg.path);
    ASSERT_EQ(files.size(), 1u) << "the collected generations are deleted";
    EXPECT_NE(*files.begin(), "values-000001.vlog");
    for (auto& [key, row] : expected) {
      EXPECT_EQ(lookup(*store, {key}), row) << key;
    }
  }
  auto store = open(cfg);
  EXPECT_EQ(store->stats().rows, expected.size());
  std::map<std::string, std::vector<float>> exported;
  ASSERT_FALSE(store->export_rows([&](const row_record& r) {
    exported[std::string{r.key}].assign(r.values.begin(), r.values.end());
  }));
  EXPECT_EQ(exported, expected) << "every row, from the newest generation, after reopening";
}

TEST_F(leveldb_store_test, ASigkillWhileTheLogIsRewrittenAndCollectedLosesNoFlushedRow) {
  auto cfg = config("collected-killed", 1);
  constexpr int keys = 200;
  auto key = [](int k) { return "k" + std::to_string(k); };
  child_process child{[&](int says) {
    // Round r sets every row to r and flushes, then says r; collections run every few rounds.
    auto store = leveldb_store::open(cfg);
    if (!store)
      ::_exit(1);
    (*store)->collect_garbage_above(1);
    for (int32_t round = 1;; ++round) {
      std::vector<float> values(4, float(round)), slots(4, 1.0f);
      for (int k = 0; k < keys; ++k) {
        auto name = key(k);
        if ((*store)->import_row({name, values, slots, 1, 1, round}))
          ::_exit(1);
      }
      if ((*store)->flush() || ::write(says, &round, sizeof round) != sizeof round)
        ::_exit(1);
    }
  }};
  ASSERT_TRUE(child.started());
  int32_t flushed = 0;
  for (int i = 0; i < 40; ++i)
    ASSERT_EQ(::read(child.reader(), &flushed, sizeof flushed), ssize_t(sizeof flushed));
  ASSERT_TRUE(child.kill());
  auto store = open(cfg);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->stats().rows, uint64_t{keys});
  for (int k = 0; k < keys; ++k) {
    auto row = lookup(*store, {key(k)});
    EXPECT_GE(row[0], float(flushed)) << key(k) << ": a flushed round was lost";
    EXPECT_EQ(row, std::vector<float>(4, row[0])) << key(k);
  }
  EXPECT_EQ(store->db_reads(), 0u) << "the index built at opening holds places in both generations";
}

TEST_F(leveldb_store_test, ADatabaseWrittenWithRowsInlineIsServedAsWritten) {
  auto cfg = config("inline");
  std::vector<float> values{1, 2, 3, 4}, slots{0.5f, 0.5f, 0.5f, 0.5f};
  {
    fs::create_directories(root);
    leveldb::DB* raw = nullptr;
    leveldb::Options options;
    options.create_if_missing = true;
    ASSERT_TRUE(leveldb::DB::Open(options, cfg.path, &raw).ok());
    std::unique_ptr<leveldb::DB> db{raw};
    std::string record;
    append_row_record({"old", values, slots, 3, 2, 9}, record);
    ASSERT_TRUE(db->Put(leveldb::WriteOptions{}, "m:format", row_format(cfg, cfg.dim)).ok());
    ASSERT_TRUE(db->Put(leveldb::WriteOptions{}, "rold", record).ok());
  }
  {
    auto store = open(cfg);
    ASSERT_TRUE(store);
    EXPECT_EQ(lookup(*store, {"old"}), values);
    update_keys(*store, {"old", "new"}, 10);
    ASSERT_FALSE(store->flush());
  }
  EXPECT_TRUE(log_files(cfg.path).empty()) << "no value log beside inline rows";
  auto store = open(cfg);
  EXPECT_EQ(store->stats().rows, 2u);
  auto rows = lookup(*store, {"old"});
  EXPECT_NE(rows, values) << "the update was written inline and read back";
  EXPECT_EQ(store->db_reads(), 1u) << "inline rows are read from LevelDB";
}

} // namespace
} // namespace darcy::stores
