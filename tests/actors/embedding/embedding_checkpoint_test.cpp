// Consistent checkpoints through the master: save, restore with another shard count, and the
// guarantees a crash relies on (an interrupted save leaves the previous checkpoint intact).
#include <filesystem>
#include <fstream>
#include <random>

#include "actors/embedding/embedding_master.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "ops/testing/redis_server.hpp"
#include "runtime/ask.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/embedding/redis_store.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

namespace fs = std::filesystem;
using runtime::ask;
using strings = std::vector<std::string>;
using floats = std::vector<float>;

de_config table(const std::string& name, optimizer_kind kind, uint32_t dim) {
  de_config cfg;
  cfg.name = name;
  cfg.dim = dim;
  cfg.optimizer = {kind, 0.05f};
  return cfg;
}

/// "users" trains with a rule its config names, whose state is one float a row (row-wise
/// Adagrad); "items" with an optimizer kind whose state is two a value (Adam): both kinds of
/// slots move between shard counts and backends with their rows.
de_config users_table() {
  auto cfg = table("users", optimizer_kind::adagrad, 4);
  cfg.optimizer.rule = "rowwise_adagrad";
  cfg.optimizer.params = {{"learning_rate", 0.05f}};
  return cfg;
}

class checkpoint_test : public test::system_fixture {
protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() / ("darcy_ckpt_actor_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::pair<embedding_master_actor, std::vector<embedding_shard_actor>> start(size_t n) {
    embedding_master_options opts;
    opts.shards = spawn_shards(sys, n);
    return {sys.spawn(embedding_master, opts), opts.shards};
  }

  void create_tables(const embedding_master_actor& m) {
    ASSERT_TRUE(ask<ok_atom>(sys, m, test::patience, create_atom::value, users_table()));
    ASSERT_TRUE(ask<ok_atom>(sys, m, test::patience, create_atom::value,
                             table("items", optimizer_kind::adam, 3)));
  }

  // A few deterministic training steps on both tables.
  void train(const embedding_master_actor& m, int steps, unsigned seed) {
    std::mt19937 rng{seed};
    std::uniform_int_distribution<int> pick{0, 99};
    std::normal_distribution<float> noise{0, 0.3f};
    for (int step = 0; step < steps; ++step)
      for (auto [name, dim] : {std::pair{"users", 4}, std::pair{"items", 3}}) {
        strings keys;
        for (int k = 0; k < 16; ++k)
          keys.push_back(std::string{name} + std::to_string(pick(rng)));
        floats grads(keys.size() * dim);
        for (auto& g : grads)
          g = noise(rng);
        auto ok = ask<ok_atom>(sys, m, test::patience, update_atom::value, std::string{name}, keys,
                               grads, int64_t{step});
        ASSERT_TRUE(ok) << render(error_of(ok));
      }
  }

  /// Stops `shards` and returns once each is down: a database they hold is unlocked then.
  void stop(const std::vector<embedding_shard_actor>& shards) {
    for (auto& shard : shards) {
      self->monitor(shard);
      self->send_exit(shard, caf::exit_reason::user_shutdown);
      ASSERT_TRUE(next<caf::down_msg>());
    }
  }

  floats rows(const embedding_master_actor& m, const std::string& name) {
    strings keys;
    for (int i = 0; i < 100; ++i)
      keys.push_back(name + std::to_string(i));
    auto r = ask<floats>(sys, m, test::patience, lookup_atom::value, name, keys);
    EXPECT_TRUE(r) << render(error_of(r));
    return r ? *r : floats{};
  }

  // Optimizer slots, counts and steps came along with the rows: further training stays
  // identical.
  void expect_same_after_training(const embedding_master_actor& a, const embedding_master_actor& b,
                                  int steps, unsigned seed) {
    train(a, steps, seed);
    train(b, steps, seed);
    for (auto name : {"users", "items"})
      EXPECT_EQ(rows(a, name), rows(b, name)) << name << " after more training";
  }

  caf::expected<checkpoint_manifest> save(const embedding_master_actor& m, int64_t step) {
    return ask<checkpoint_manifest>(sys, m, test::patience, save_atom::value, dir, step,
                                    std::string{"extra-"} + std::to_string(step));
  }

  caf::expected<checkpoint_manifest> restore(const embedding_master_actor& m) {
    return ask<checkpoint_manifest>(sys, m, test::patience, restore_atom::value, dir);
  }

  // Incremental checkpoints, full_every deltas on each full one.
  caf::expected<checkpoint_manifest> save_incremental(const embedding_master_actor& m, int64_t step,
                                                      uint32_t full_every) {
    return ask<checkpoint_manifest>(sys, m, test::patience, save_atom::value, dir, step,
                                    std::string{}, full_every);
  }

  // Tables trained 5 steps and saved in full, then `more` steps and saved as a delta on it:
  // that delta, the chain's head.
  caf::expected<checkpoint_manifest> trained_chain(const embedding_master_actor& m, int more,
                                                   uint32_t full_every) {
    create_tables(m);
    train(m, 5, 1);
    if (auto full = save_incremental(m, 1, full_every); !full)
      return full;
    train(m, more, 2);
    return save_incremental(m, 2, full_every);
  }

  // A third table whose rows go: LRU over at most 10 rows a shard.
  void create_evicting_table(const embedding_master_actor& m) {
    auto cfg = table("recent", optimizer_kind::sgd, 2);
    cfg.eviction = {eviction_kind::lru, 0, 10};
    ASSERT_TRUE(ask<ok_atom>(sys, m, test::patience, create_atom::value, cfg));
  }

  void train_recent(const embedding_master_actor& m, int first, int count, int64_t step) {
    strings keys;
    for (int k = first; k < first + count; ++k)
      keys.push_back("recent" + std::to_string(k));
    floats grads(keys.size() * 2, 0.25f);
    auto ok = ask<ok_atom>(sys, m, test::patience, update_atom::value, std::string{"recent"}, keys,
                           grads, step);
    ASSERT_TRUE(ok) << render(error_of(ok));
  }

  uint64_t row_count(const embedding_master_actor& m, const std::string& name) {
    auto st = ask<embedding_stats>(sys, m, test::patience, stats_atom::value, name);
    EXPECT_TRUE(st) << render(error_of(st));
    return st ? st->rows : 0;
  }

  static uint64_t rows_written(const checkpoint_manifest& m) {
    uint64_t n = 0;
    for (auto& entry : m.embeddings)
      for (auto& file : entry.files)
        n += file.rows;
    return n;
  }

  std::string dir;
};

TEST_F(checkpoint_test, SaveFromFourShardsRestoresIntoThreeExactly) {
  auto [four, four_shards] = start(4);
  create_tables(four);
  train(four, 30, 1);
  auto manifest = save(four, 30);
  ASSERT_TRUE(manifest) << render(error_of(manifest));
  EXPECT_EQ(manifest->shard_count, 4u);
  ASSERT_EQ(manifest->embeddings.size(), 2u);
  EXPECT_EQ(manifest->embeddings[0].files.size(), 4u);

  auto [three, three_shards] = start(3);
  auto restored = restore(three);
  ASSERT_TRUE(restored) << render(error_of(restored));
  EXPECT_EQ(restored->step, 30);
  EXPECT_EQ(restored->extra, "extra-30");
  for (auto name : {"users", "items"})
    EXPECT_EQ(rows(three, name), rows(four, name)) << name;
  expect_same_after_training(three, four, 10, 2);
}

TEST_F(checkpoint_test, InterruptedSaveLeavesThePreviousCheckpointRestorable) {
  auto [master, shards] = start(2);
  create_tables(master);
  train(master, 5, 3);
  ASSERT_TRUE(save(master, 5));
  auto at_five = rows(master, "users");
  train(master, 5, 4);
  // A save that died after its shards wrote their files but before the manifest.
  for (uint32_t s = 0; s < shards.size(); ++s)
    ASSERT_TRUE(ask<std::vector<checkpoint_embedding>>(
      sys, shards[s], test::patience, save_part_atom::value, dir, std::string{"ckpt-10-dead"}, s,
      std::string{}, uint64_t{0}));
  auto [fresh, fresh_shards] = start(2);
  auto restored = restore(fresh);
  ASSERT_TRUE(restored) << render(error_of(restored));
  EXPECT_EQ(restored->step, 5);
  EXPECT_EQ(rows(fresh, "users"), at_five);
  // The next successful save removes the dead attempt's files.
  ASSERT_TRUE(save(master, 10));
  EXPECT_FALSE(fs::exists(dir + "/ckpt-10-dead"));
}

TEST_F(checkpoint_test, CorruptFileFailsTheRestoreAndLeavesTheServiceUnchanged) {
  auto [master, shards] = start(2);
  create_tables(master);
  train(master, 5, 5);
  auto manifest = save(master, 5);
  ASSERT_TRUE(manifest);
  auto [other, other_shards] = start(2);
  create_tables(other);
  train(other, 3, 6);
  auto before = rows(other, "users");
  auto victim = dir + "/" + manifest->embeddings[0].files[1].path;
  fs::resize_file(victim, fs::file_size(victim) - 8);
  auto restored = restore(other);
  EXPECT_TRUE(is(error_of(restored), errc::corrupt_file)) << render(error_of(restored));
  EXPECT_EQ(rows(other, "users"), before);
  auto nothing =
    ask<checkpoint_manifest>(sys, other, test::patience, restore_atom::value, dir + "/empty");
  EXPECT_TRUE(is(error_of(nothing), errc::not_found));
}

} // namespace
} // namespace darcy::actors

namespace darcy::actors {
namespace {

TEST_F(checkpoint_test, LeveldbTablesMoveBetweenShardCountsToo) {
  auto persistent = users_table();
  persistent.backend = backend_kind::leveldb;
  persistent.path = dir + "/db-two";
  auto [two, two_shards] = start(2);
  ASSERT_TRUE(ask<ok_atom>(sys, two, test::patience, create_atom::value, persistent));
  ASSERT_TRUE(ask<ok_atom>(sys, two, test::patience, create_atom::value,
                           table("items", optimizer_kind::adam, 3)));
  train(two, 20, 8);
  ASSERT_TRUE(save(two, 20));
  EXPECT_TRUE(fs::exists(dir + "/db-two/shard-0")) << "one database per shard";
  auto expected = rows(two, "users");
  // The old service goes away first: its databases are locked while it runs.
  stop(two_shards);
  auto [three, three_shards] = start(3);
  auto restored = restore(three);
  ASSERT_TRUE(restored) << render(error_of(restored));
  EXPECT_EQ(rows(three, "users"), expected);
}

TEST_F(checkpoint_test, LeveldbTablesChainIncrementalCheckpointsToo) {
  auto persistent = users_table();
  persistent.backend = backend_kind::leveldb;
  persistent.path = dir + "/db-chain";
  persistent.cache_bytes = 1; // 16 rows in memory: deltas read rows from the database
  auto [two, two_shards] = start(2);
  ASSERT_TRUE(ask<ok_atom>(sys, two, test::patience, create_atom::value, persistent));
  ASSERT_TRUE(ask<ok_atom>(sys, two, test::patience, create_atom::value,
                           table("items", optimizer_kind::adam, 3)));
  train(two, 10, 8);
  ASSERT_TRUE(save_incremental(two, 1, 5));
  train(two, 10, 9);
  auto delta = save_incremental(two, 2, 5);
  ASSERT_TRUE(delta) << render(error_of(delta));
  EXPECT_FALSE(delta->base.empty());
  auto expected = rows(two, "users");
  stop(two_shards);
  auto [three, three_shards] = start(3);
  ASSERT_TRUE(restore(three));
  EXPECT_EQ(rows(three, "users"), expected);
}

TEST_F(checkpoint_test, RedisTablesMoveBetweenShardCountsToo) {
  auto redis = darcy::testing::redis_server::start({});
  ASSERT_TRUE(redis) << render(error_of(redis));
  auto shared = users_table();
  shared.backend = backend_kind::redis;
  shared.path = (*redis)->url("checkpoint");
  shared.staleness_ms = 0; // Redis holds every change when a call returns
  auto [two, two_shards] = start(2);
  ASSERT_TRUE(ask<ok_atom>(sys, two, test::patience, create_atom::value, shared));
  ASSERT_TRUE(ask<ok_atom>(sys, two, test::patience, create_atom::value,
                           table("items", optimizer_kind::adam, 3)));
  train(two, 3, 8);
  ASSERT_TRUE(save(two, 3));
  auto at_save =
    ask<embedding_stats>(sys, two, test::patience, stats_atom::value, std::string{"users"});
  ASSERT_TRUE(at_save);
  ASSERT_LT(at_save->rows, 100u);
  auto expected = rows(two, "users"); // creates the missing rows: a change the restore undoes
  train(two, 10, 9);
  stop(two_shards);
  auto [three, three_shards] = start(3);
  auto restored = restore(three);
  ASSERT_TRUE(restored) << render(error_of(restored));
  auto reader = stores::redis_store::open_reader((*redis)->url("checkpoint"), "users", 1 << 20, 0);
  ASSERT_TRUE(reader) << render(error_of(reader));
  EXPECT_EQ((*reader)->stats().rows, at_save->rows) << "no row of the later training is left";
  EXPECT_EQ(rows(three, "users"), expected);
}

TEST_F(checkpoint_test,
       AFullCheckpointAndThreeDeltasRestoreWhatAFullOneHoldsOntoAnotherShardCount) {
  auto [m, shards] = start(4);
  create_tables(m);
  create_evicting_table(m);
  for (int round = 0; round < 4; ++round) {
    train(m, 5, static_cast<unsigned>(round + 1));
    // 30 new keys a round over at most 40 rows on 4 shards: rows go between saves.
    train_recent(m, round * 30, 30, round);
    auto saved = save_incremental(m, round, 3);
    ASSERT_TRUE(saved) << render(error_of(saved));
    EXPECT_EQ(saved->base.empty(), round == 0) << "round " << round;
  }
  auto chain_dir = dir;
  dir = chain_dir + "-full";
  ASSERT_TRUE(save(m, 3));
  auto [from_chain, a] = start(3);
  auto [from_full, b] = start(3);
  dir = chain_dir;
  ASSERT_TRUE(restore(from_chain));
  dir = chain_dir + "-full";
  ASSERT_TRUE(restore(from_full));
  fs::remove_all(dir);
  dir = chain_dir;
  for (auto name : {"users", "items", "recent"})
    EXPECT_EQ(row_count(from_chain, name), row_count(from_full, name)) << name;
  EXPECT_LT(row_count(m, "recent"), 120u) << "rows were evicted";
  EXPECT_EQ(row_count(from_chain, "recent"), row_count(m, "recent")) << "evicted rows stay evicted";
  for (auto name : {"users", "items", "recent"})
    EXPECT_EQ(rows(from_chain, name), rows(from_full, name)) << name;
  expect_same_after_training(from_chain, from_full, 5, 9);
}

TEST_F(checkpoint_test, ADeltaHoldsOnlyTheRowsChangedSinceItsBase) {
  auto [m, shards] = start(2);
  create_tables(m);
  train(m, 5, 1);
  auto full = save_incremental(m, 1, 5);
  ASSERT_TRUE(full) << render(error_of(full));
  auto idle = save_incremental(m, 2, 5);
  ASSERT_TRUE(idle) << render(error_of(idle));
  EXPECT_EQ(idle->base, full->checkpoint);
  EXPECT_EQ(rows_written(*idle), 0u) << "nothing changed";
  ASSERT_TRUE(ask<ok_atom>(sys, m, test::patience, update_atom::value, std::string{"users"},
                           strings{"users1", "users2"}, floats(8, 0.5f), int64_t{6}));
  auto two = save_incremental(m, 3, 5);
  ASSERT_TRUE(two) << render(error_of(two));
  EXPECT_EQ(rows_written(*two), 2u);
  EXPECT_GT(rows_written(*full), 2u);
}

TEST_F(checkpoint_test, ACheckpointElsewhereBetweenTwoSyncsLeavesTheNextSyncADelta) {
  // A stream job's chief: syncs chained in `dir`, training checkpoints in another folder.
  auto [m, shards] = start(2);
  create_tables(m);
  train(m, 5, 1);
  auto full = save_incremental(m, 1, 5);
  ASSERT_TRUE(full) << render(error_of(full));
  ASSERT_TRUE(ask<ok_atom>(sys, m, test::patience, update_atom::value, std::string{"users"},
                           strings{"users1", "users2"}, floats(8, 0.5f), int64_t{6}));
  auto elsewhere = ask<checkpoint_manifest>(sys, m, test::patience, save_atom::value,
                                            dir + "/training", int64_t{2}, std::string{});
  ASSERT_TRUE(elsewhere) << render(error_of(elsewhere));
  EXPECT_EQ(rows_written(*elsewhere), rows_written(*full)) << "a checkpoint holds every row";
  ASSERT_TRUE(ask<ok_atom>(sys, m, test::patience, update_atom::value, std::string{"users"},
                           strings{"users3"}, floats(4, 0.5f), int64_t{7}));
  auto next = save_incremental(m, 3, 5);
  ASSERT_TRUE(next) << render(error_of(next));
  EXPECT_EQ(next->base, full->checkpoint);
  EXPECT_EQ(rows_written(*next), 3u) << "the rows changed before and after the checkpoint";
}

TEST_F(checkpoint_test, ADeltaSaveThatDiesBeforeItsManifestLeavesThePreviousChainRestorable) {
  auto [m, shards] = start(2);
  auto head = trained_chain(m, 5, 5);
  ASSERT_TRUE(head) << render(error_of(head));
  auto [before, b] = start(3);
  ASSERT_TRUE(restore(before));
  train(m, 5, 3);
  // A delta whose shards wrote their parts, then died before the manifest.
  for (uint32_t s = 0; s < shards.size(); ++s)
    ASSERT_TRUE(ask<std::vector<checkpoint_embedding>>(
      sys, shards[s], test::patience, save_part_atom::value, dir, std::string{"ckpt-dead-1"}, s,
      head->checkpoint, uint64_t{1} << 20));
  auto [after, c] = start(3);
  auto restored = restore(after);
  ASSERT_TRUE(restored) << render(error_of(restored));
  EXPECT_EQ(restored->checkpoint, head->checkpoint);
  for (auto name : {"users", "items"})
    EXPECT_EQ(rows(after, name), rows(before, name)) << name;
  // The next delta still holds the changes the dead one took.
  auto next = save_incremental(m, 3, 5);
  ASSERT_TRUE(next) << render(error_of(next));
  EXPECT_EQ(next->base, head->checkpoint);
  auto [latest, d] = start(3);
  ASSERT_TRUE(restore(latest));
  for (auto name : {"users", "items"})
    EXPECT_EQ(rows(latest, name), rows(m, name)) << name;
  EXPECT_FALSE(fs::exists(dir + "/ckpt-dead-1")) << "the dead attempt's files are gone";
}

TEST_F(checkpoint_test, RetentionRemovesWholeChainsAndARestoreStartsANewOne) {
  auto [m, shards] = start(2);
  create_tables(m);
  auto directories = [&] {
    size_t n = 0;
    for (auto& entry : fs::directory_iterator(dir))
      n += entry.is_directory() ? 1 : 0;
    return n;
  };
  std::vector<std::string> bases;
  for (int round = 0; round < 5; ++round) {
    train(m, 2, static_cast<unsigned>(round + 1));
    auto saved = save_incremental(m, round, 2);
    ASSERT_TRUE(saved) << render(error_of(saved));
    bases.push_back(saved->base);
    // Rounds 0..2 are one chain (a full and 2 deltas). Round 3 ends it with a last delta and
    // starts the next at the same state, keeping both chains; round 4's delta drops the first.
    size_t expected[] = {1, 2, 3, 5, 2};
    EXPECT_EQ(directories(), expected[round]) << round;
    if (round == 3) {
      ASSERT_FALSE(saved->same_as.empty());
      auto last = stores::checkpoint_dir{dir}.read_manifest_of(saved->same_as);
      ASSERT_TRUE(last) << render(last.error());
      EXPECT_EQ(last->step, saved->step);
      EXPECT_FALSE(last->base.empty()) << "the old chain's last delta";
    } else {
      EXPECT_TRUE(saved->same_as.empty()) << round;
    }
  }
  EXPECT_TRUE(bases[0].empty());
  EXPECT_TRUE(bases[3].empty()) << "a full one after full_every deltas";
  ASSERT_TRUE(restore(m));
  auto saved = save_incremental(m, 5, 2);
  ASSERT_TRUE(saved) << render(error_of(saved));
  EXPECT_TRUE(saved->base.empty()) << "a restore starts a new chain";
  ASSERT_TRUE(save(m, 6));
  EXPECT_EQ(directories(), 1u) << "a plain save keeps one checkpoint, as before";
}

TEST_F(checkpoint_test, AChainWithAMissingBaseIsRefusedAndChangesNothing) {
  auto [m, shards] = start(2);
  create_tables(m);
  train(m, 5, 1);
  auto full = save_incremental(m, 1, 5);
  ASSERT_TRUE(full);
  train(m, 5, 2);
  ASSERT_TRUE(save_incremental(m, 2, 5));
  fs::remove_all(dir + "/" + full->checkpoint);
  auto [fresh, f] = start(2);
  ASSERT_TRUE(ask<ok_atom>(sys, fresh, test::patience, create_atom::value,
                           table("users", optimizer_kind::adagrad, 4)));
  auto before = rows(fresh, "users");
  auto restored = restore(fresh);
  ASSERT_FALSE(restored);
  EXPECT_TRUE(is(error_of(restored), errc::corrupt_file)) << render(error_of(restored));
  EXPECT_EQ(rows(fresh, "users"), before);
}

caf::expected<ok_atom> sync(caf::actor_system& sys, const embedding_master_actor& m,
                            const std::string& dir, const checkpoint_manifest& link) {
  return ask<ok_atom>(sys, m, test::patience, sync_atom::value, dir, link);
}

TEST_F(checkpoint_test, SyncsBringAServingCopyToTheTrainingRowsDeltaByDelta) {
  auto [training, t] = start(4);
  create_tables(training);
  create_evicting_table(training);
  train(training, 5, 1);
  train_recent(training, 0, 30, 0);
  ASSERT_TRUE(save_incremental(training, 0, 10));
  auto [serving, s] = start(3);
  ASSERT_TRUE(restore(serving));
  std::vector<checkpoint_manifest> links;
  for (int round = 1; round <= 3; ++round) {
    train(training, 3, static_cast<unsigned>(round + 1));
    train_recent(training, round * 30, 30, round); // evicts rows the serving copy holds
    auto delta = save_incremental(training, round, 10);
    ASSERT_TRUE(delta) << render(error_of(delta));
    auto synced = sync(sys, serving, dir, *delta);
    ASSERT_TRUE(synced) << render(error_of(synced));
    links.push_back(*delta);
    for (auto name : {"users", "items", "recent"})
      EXPECT_EQ(row_count(serving, name), row_count(training, name)) << name << " " << round;
  }
  for (auto name : {"users", "items", "recent"})
    EXPECT_EQ(rows(serving, name), rows(training, name)) << name;
  // A sync whose base the copy does not hold is refused and changes nothing.
  auto before = rows(serving, "users");
  auto stale = sync(sys, serving, dir, links[1]);
  ASSERT_FALSE(stale);
  EXPECT_TRUE(is(error_of(stale), errc::invalid_argument)) << render(error_of(stale));
  EXPECT_EQ(rows(serving, "users"), before);
}

TEST_F(checkpoint_test, ASaveRightAfterARestoreNamesItSoThatACopyHoldingItGoesOnByDeltas) {
  auto [training, t] = start(2);
  auto head = trained_chain(training, 3, 10);
  ASSERT_TRUE(head) << render(error_of(head));
  auto [serving, s] = start(3);
  ASSERT_TRUE(restore(serving));
  // The training process dies; its successor restores the head and saves at once.
  auto [resumed, r] = start(2);
  ASSERT_TRUE(restore(resumed));
  auto restarted =
    ask<checkpoint_manifest>(sys, resumed, test::patience, save_atom::value, dir, int64_t{2},
                             std::string{}, uint32_t{10}, head->checkpoint);
  ASSERT_TRUE(restarted) << render(error_of(restarted));
  EXPECT_TRUE(restarted->base.empty()) << "a new chain";
  EXPECT_EQ(restarted->same_as, head->checkpoint);
  train(resumed, 3, 3);
  auto next = save_incremental(resumed, 3, 10);
  ASSERT_TRUE(next) << render(error_of(next));
  EXPECT_EQ(next->base, restarted->checkpoint) << "the chain goes on by deltas";
  auto synced = sync(sys, serving, dir, *next);
  ASSERT_TRUE(synced) << render(error_of(synced));
  for (auto name : {"users", "items"})
    EXPECT_EQ(rows(serving, name), rows(resumed, name)) << name;
  // Naming a checkpoint that is no longer the newest saves as usual, naming nothing.
  auto stale = ask<checkpoint_manifest>(sys, resumed, test::patience, save_atom::value, dir,
                                        int64_t{3}, std::string{}, uint32_t{10}, head->checkpoint);
  ASSERT_TRUE(stale) << render(error_of(stale));
  EXPECT_TRUE(stale->same_as.empty());
}

TEST_F(checkpoint_test, AShardWhoseChangesOverflowWritesItsWholePartAndSyncsStillAgree) {
  embedding_master_options opts;
  opts.shards = spawn_shards(sys, 2);
  opts.max_tracked_keys = 10;
  auto training = sys.spawn(embedding_master, opts);
  create_tables(training);
  train(training, 2, 1);
  auto full = save_incremental(training, 0, 10);
  ASSERT_TRUE(full) << render(error_of(full));
  auto [serving, s] = start(3);
  ASSERT_TRUE(restore(serving));
  train(training, 5, 2); // far more than 10 keys a shard
  auto delta = save_incremental(training, 1, 10);
  ASSERT_TRUE(delta) << render(error_of(delta));
  EXPECT_EQ(delta->base, full->checkpoint);
  ASSERT_EQ(delta->embeddings.size(), 2u);
  for (auto& entry : delta->embeddings) {
    uint64_t written = 0;
    for (auto& file : entry.files)
      written += file.rows;
    EXPECT_EQ(written, row_count(training, entry.config.name))
      << entry.config.name << ": whole parts hold every row";
  }
  ASSERT_TRUE(sync(sys, serving, dir, *delta));
  for (auto name : {"users", "items"})
    EXPECT_EQ(rows(serving, name), rows(training, name)) << name;
}

TEST_F(checkpoint_test, ASyncWithADamagedPartChangesNoShard) {
  auto [training, t] = start(2);
  create_tables(training);
  train(training, 5, 1);
  ASSERT_TRUE(save_incremental(training, 0, 10));
  auto [serving, s] = start(2);
  ASSERT_TRUE(restore(serving));
  auto before = rows(serving, "users");
  train(training, 5, 2);
  auto delta = save_incremental(training, 1, 10);
  ASSERT_TRUE(delta) << render(error_of(delta));
  auto& part = delta->embeddings.back().files.back();
  {
    std::fstream f{dir + "/" + part.path, std::ios::in | std::ios::out | std::ios::binary};
    auto at = static_cast<std::streamoff>(part.bytes / 2);
    f.seekg(at);
    auto byte = static_cast<char>(f.get() ^ 0x5a);
    f.seekp(at);
    f.put(byte);
  }
  auto synced = sync(sys, serving, dir, *delta);
  ASSERT_FALSE(synced);
  EXPECT_TRUE(is(error_of(synced), errc::corrupt_file)) << render(error_of(synced));
  EXPECT_EQ(rows(serving, "users"), before) << "every shard read every part before applying";
}

} // namespace
} // namespace darcy::actors
