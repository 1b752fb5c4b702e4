#include "actors/embedding/master_queue.hpp"

#include "actors/embedding/embedding_master.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/chaos.hpp"
#include "stores/embedding/de_config.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"

// How the master asks its shards again: a shard's part of a save or a restore, whose work
// grows with its tables, gets more attempts than a lookup or an update.
namespace darcy::actors {
namespace {

using runtime::ask;

class master_queue_test : public test::system_fixture {};

// Every message to the shard arrives 500 ms late, after its 100 ms first attempt timed out: a
// request allowed one attempt fails, and the save and the restore, allowed 8 doubling attempts
// (the 4th waits 800 ms, the last 12.8 s), succeed with the rows as they were.
TEST_F(master_queue_test, ASaveOrRestoreSlowerThanTheFirstAttemptsIsWaitedForByItsFileAttempts) {
  struct case_t {
    const char* name;
    uint32_t file_attempts;
    bool succeeds;
  } cases[] = {{"one attempt, as a lookup gets", 1, false},
               {"8 attempts, the default of 10 lowered", 8, true}};
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    test::temp_dir dir{"master_queue_files"};
    embedding_master_options opts;
    auto shard = spawn_shards(sys, 1).front();
    auto gate = sys.spawn(runtime::chaos_gate, caf::actor_cast<caf::actor>(shard), disruption{});
    opts.shards = {caf::actor_cast<embedding_shard_actor>(gate)};
    opts.attempt_timeout = std::chrono::milliseconds{100};
    opts.attempts = 1;
    opts.file_attempts = c.file_attempts;
    auto master = sys.spawn(embedding_master, opts);
    de_config cfg;
    cfg.name = "words";
    cfg.dim = 2;
    ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, cfg));
    std::vector<std::string> keys{"a", "b", "c"};
    ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, update_atom::value, cfg.name, keys,
                             std::vector<float>(6, 0.5f), int64_t{1}));
    auto rows =
      ask<std::vector<float>>(sys, master, test::patience, lookup_atom::value, cfg.name, keys);
    ASSERT_TRUE(rows);
    ASSERT_TRUE(ask<chaos_stats>(sys, gate, test::patience,
                                 chaos_command{chaos_op::disrupt, {0, 1.0, 500, 5}}));
    auto saved = ask<checkpoint_manifest>(sys, master, test::patience, save_atom::value, dir.path(),
                                          int64_t{1}, std::string{});
    EXPECT_EQ(static_cast<bool>(saved), c.succeeds) << render(error_of(saved));
    if (!c.succeeds)
      continue;
    auto restored =
      ask<checkpoint_manifest>(sys, master, test::patience, restore_atom::value, dir.path());
    ASSERT_TRUE(restored) << render(error_of(restored));
    ASSERT_TRUE(
      ask<chaos_stats>(sys, gate, test::patience, chaos_command{chaos_op::disrupt, disruption{}}));
    auto looked =
      ask<std::vector<float>>(sys, master, test::patience, lookup_atom::value, cfg.name, keys);
    ASSERT_TRUE(looked) << render(error_of(looked));
    EXPECT_EQ(*looked, *rows);
  }
}

} // namespace
} // namespace darcy::actors
