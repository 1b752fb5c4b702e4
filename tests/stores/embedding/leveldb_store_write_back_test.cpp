#include "stores/embedding/leveldb_store.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/stores/embedding/leveldb_store_fixture.hpp"

// The LevelDB tier's write-backs, which the background writer runs while the caller goes on.
namespace darcy::stores {
namespace {

using leveldb_testing::leveldb_store_test;

// A write-back runs on the background writer, or on the caller's thread when it holds fewer
// rows than the store's min_background_rows (a small tier). Either way a row looked up again
// before the write-back is finished must come from its batch (the sampling index and the
// pointer cache still name its older record), and what was then written must be that row.
TEST_F(leveldb_store_test, ARowLookedUpWhileItsWriteBackIsInFlightReadsItsNewestValues) {
  struct case_t {
    const char* name;
    size_t min_background_rows;
    bool on_writer;
  } cases[] = {{"on the background writer", 1, true},
               {"on the caller's thread, the batches below the store's minimum",
                leveldb_store::default_min_background_rows, false}};
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto cfg = config(std::string{"in_flight"} + (c.on_writer ? "_writer" : "_inline"), 1);
    std::vector<float> newest;
    {
      auto disk = open(cfg, c.min_background_rows);
      auto mem = memory_twin(cfg);
      std::vector<std::string_view> a{"a"};
      std::vector<float> grads(4, 0.5f);
      for (int step = 1; step <= 3; ++step) {
        // The step's update pushes "a" out with the 16 keys after it, each time with new values.
        ASSERT_FALSE(disk->update(a, grads, step));
        ASSERT_FALSE(mem->update(a, grads, step));
        std::vector<std::string> others;
        for (int k = 0; k < 16; ++k)
          others.push_back("other" + std::to_string(k));
        ASSERT_EQ(lookup(*disk, others), lookup(*mem, others));
        auto before = disk->pending_reads();
        newest = lookup(*mem, {"a"});
        ASSERT_EQ(lookup(*disk, {"a"}), newest) << "step " << step;
        EXPECT_EQ(disk->pending_reads(), before + 1) << "its write-back was pending, step " << step;
      }
      EXPECT_EQ(disk->background_write_backs() > 0, c.on_writer);
    }
    EXPECT_EQ(lookup(*open(cfg), {"a"}), newest) << "and the record written is the newest";
  }
}

// A write-back the writer could not do loses nothing: its rows are back in the memory tier,
// dirty, the caller hears of it at its next call, and the next write-back writes them.
TEST_F(leveldb_store_test, AFailedWriteBackPutsItsRowsBackAndTheNextOneWritesThem) {
  struct case_t {
    const char* name;
    int second_keys_from;
  } cases[] = {{"its rows read back before the failure is known", 0},
               {"its rows not read back", 100}};
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto cfg = config(std::string{"failing"} + std::to_string(c.second_keys_from), 1);
    auto disk = open(cfg);
    auto mem = memory_twin(cfg);
    auto step = [&](int from, int64_t at) {
      std::vector<std::string> keys;
      for (int k = from; k < from + 40; ++k)
        keys.push_back("key" + std::to_string(k));
      std::vector<std::string_view> views(keys.begin(), keys.end());
      std::vector<float> grads(keys.size() * 4, 0.25f + 0.01f * float(at));
      EXPECT_FALSE(mem->update(views, grads, at));
      return disk->update(views, grads, at);
    };
    disk->fail_write_backs(1);
    // 40 rows through a cache of 16: the first call hands 24 to a write-back that fails; the
    // second, past the budget too, waits for it and says so, its own update applied.
    ASSERT_FALSE(step(0, 1));
    auto err = step(c.second_keys_from, 2);
    ASSERT_TRUE(is(err, errc::io_error)) << render(err);
    EXPECT_EQ(state_of(*disk), state_of(*mem)) << "every row, with its newest values";
    disk.reset();
    EXPECT_EQ(state_of(*open(cfg)), state_of(*mem)) << "and written";
  }
}

} // namespace
} // namespace darcy::stores
