// actors/embedding/shard_checkpoint: a shard loads a checkpoint of memory tables aside, on a
// thread of its own, answering other requests meanwhile even on a scheduler of one thread (the
// part file is a pipe the test fills only once the shard has answered); repeats of the load
// share its answer, a later load supersedes one still reading, and a failed load leaves the
// tables as they were.
#include "actors/embedding/shard_checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "base/atomic_file.hpp"
#include "runtime/ask.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

namespace fs = std::filesystem;
using runtime::ask;
using strings = std::vector<std::string>;
using floats = std::vector<float>;

/// A system of one scheduler thread: a handler that blocks holds up every other actor.
struct one_thread_config : test::test_config {
  one_thread_config() { set("scheduler.max-threads", size_t{1}); }
};

class shard_checkpoint_test : public ::testing::Test {
protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() / ("darcy_shard_ckpt_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    fs::create_directories(dir);
    // The checkpoint: table "words" with rows a and b, written by a shard of its own.
    auto writer = sys.spawn(embedding_shard, uint32_t{0});
    test::stop_on_exit stop{sys, caf::actor_cast<caf::actor>(writer)};
    ASSERT_TRUE(ask<ok_atom>(sys, writer, test::patience, create_atom::value, table("words")));
    ASSERT_TRUE(ask<ok_atom>(sys, writer, test::patience, update_atom::value, std::string{"words"},
                             strings{"a", "b"}, floats{1, 1, 1, 1}, int64_t{1}));
    written = ask<floats>(sys, writer, test::patience, lookup_atom::value, std::string{"words"},
                          strings{"a", "b"});
    ASSERT_TRUE(written);
    auto parts = ask<std::vector<checkpoint_embedding>>(
      sys, writer, test::patience, save_part_atom::value, dir, std::string{"ckpt-1"}, uint32_t{0},
      std::string{}, uint64_t{0});
    ASSERT_TRUE(parts) << render(error_of(parts));
    manifest.checkpoint = "ckpt-1";
    manifest.shard_count = 1;
    manifest.embeddings = *parts;
    // A later checkpoint, ckpt-2, after one more update.
    ASSERT_TRUE(ask<ok_atom>(sys, writer, test::patience, update_atom::value, std::string{"words"},
                             strings{"a", "b"}, floats{1, 1, 1, 1}, int64_t{2}));
    later_rows = ask<floats>(sys, writer, test::patience, lookup_atom::value, std::string{"words"},
                             strings{"a", "b"});
    auto later_parts = ask<std::vector<checkpoint_embedding>>(
      sys, writer, test::patience, save_part_atom::value, dir, std::string{"ckpt-2"}, uint32_t{0},
      std::string{}, uint64_t{0});
    ASSERT_TRUE(later_parts) << render(error_of(later_parts));
    later = manifest;
    later.checkpoint = "ckpt-2";
    later.embeddings = *later_parts;
  }
  void TearDown() override { fs::remove_all(dir); }

  static de_config table(const std::string& name) {
    de_config cfg;
    cfg.name = name;
    cfg.dim = 2;
    cfg.optimizer = {optimizer_kind::sgd, 0.5f};
    return cfg;
  }

  /// The part file of the checkpoint, made a pipe; its bytes.
  std::string part_as_pipe() {
    auto path = (fs::path{dir} / manifest.embeddings.at(0).files.at(0).path).string();
    auto bytes = base::read_file(path);
    EXPECT_TRUE(bytes);
    fs::remove(path);
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0);
    part = path;
    return bytes ? *bytes : std::string{};
  }

  /// Writes `bytes` into the pipe, waiting for its reader.
  void feed(const std::string& bytes) const {
    int fd = ::open(part.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    for (size_t at = 0; at < bytes.size();) {
      auto n = ::write(fd, bytes.data() + at, bytes.size() - at);
      ASSERT_GT(n, 0);
      at += static_cast<size_t>(n);
    }
    ::close(fd);
  }

  caf::expected<ok_atom> load(const embedding_shard_actor& shard, uint64_t id) {
    return ask<ok_atom>(sys, shard, test::patience, load_part_atom::value, dir, manifest,
                        uint32_t{0}, uint32_t{1}, id);
  }

  one_thread_config cfg;
  caf::actor_system sys{cfg};
  std::string dir, part;
  checkpoint_manifest manifest, later;
  caf::expected<floats> written = floats{}, later_rows = floats{};
};

TEST_F(shard_checkpoint_test, ALoadOfMemoryTablesLeavesTheShardAnsweringUntilItsFileIsRead) {
  auto bytes = part_as_pipe();
  auto shard = sys.spawn(embedding_shard, uint32_t{0});
  test::stop_on_exit stop{sys, caf::actor_cast<caf::actor>(shard)};
  ASSERT_TRUE(ask<ok_atom>(sys, shard, test::patience, create_atom::value, table("old")));
  caf::scoped_actor client{sys};
  client->send(shard, load_part_atom::value, dir, manifest, uint32_t{0}, uint32_t{1}, uint64_t{7});
  client->send(shard, load_part_atom::value, dir, manifest, uint32_t{0}, uint32_t{1},
               uint64_t{7}); // a repeat, as the master sends one after its attempt time
  // The loader waits on the pipe: the shard, alone on the only thread, still answers.
  auto old =
    ask<embedding_stats>(sys, shard, test::patience, stats_atom::value, std::string{"old"});
  std::thread writer{[&] { feed(bytes); }};
  for (int answers = 0; answers < 2; ++answers)
    client->receive([](ok_atom) {},
                    [](caf::error& err) { ADD_FAILURE() << "the load failed: " << render(err); },
                    caf::after(test::patience) >> [] { ADD_FAILURE() << "no answer to the load"; });
  writer.join();
  ASSERT_TRUE(old) << render(error_of(old));
  auto rows = ask<floats>(sys, shard, test::patience, lookup_atom::value, std::string{"words"},
                          strings{"a", "b"});
  ASSERT_TRUE(rows) << render(error_of(rows));
  EXPECT_EQ(*rows, *written);
  // The old tables went with the load; a repeat arriving after it is answered at once.
  EXPECT_FALSE(
    ask<embedding_stats>(sys, shard, test::patience, stats_atom::value, std::string{"old"}));
  EXPECT_TRUE(load(shard, 7));
}

TEST_F(shard_checkpoint_test, ALoadBegunLaterSupersedesOneStillReading) {
  auto bytes = part_as_pipe(); // ckpt-1's part
  auto shard = sys.spawn(embedding_shard, uint32_t{0});
  test::stop_on_exit stop{sys, caf::actor_cast<caf::actor>(shard)};
  caf::scoped_actor client{sys};
  client->send(shard, load_part_atom::value, dir, manifest, uint32_t{0}, uint32_t{1}, uint64_t{7});
  ASSERT_TRUE(ask<ok_atom>(sys, shard, test::patience, load_part_atom::value, dir, later,
                           uint32_t{0}, uint32_t{1}, uint64_t{8}));
  std::thread writer{[&] { feed(bytes); }};
  client->receive([](ok_atom) { ADD_FAILURE() << "the superseded load was applied"; },
                  [](caf::error& err) { EXPECT_TRUE(is(err, errc::unavailable)) << render(err); },
                  caf::after(test::patience) >> [] { ADD_FAILURE() << "no answer to the load"; });
  writer.join();
  auto rows = ask<floats>(sys, shard, test::patience, lookup_atom::value, std::string{"words"},
                          strings{"a", "b"});
  ASSERT_TRUE(rows) << render(error_of(rows));
  EXPECT_EQ(*rows, *later_rows); // ckpt-2's, not the older ckpt-1's read last
  EXPECT_NE(*rows, *written);
}

TEST_F(shard_checkpoint_test, AFailedLoadLeavesTheTablesAsTheyWere) {
  auto path = fs::path{dir} / manifest.embeddings.at(0).files.at(0).path;
  fs::resize_file(path, fs::file_size(path) / 2);
  auto shard = sys.spawn(embedding_shard, uint32_t{0});
  test::stop_on_exit stop{sys, caf::actor_cast<caf::actor>(shard)};
  ASSERT_TRUE(ask<ok_atom>(sys, shard, test::patience, create_atom::value, table("old")));
  auto loaded = load(shard, 8);
  ASSERT_FALSE(loaded);
  EXPECT_TRUE(is(error_of(loaded), errc::corrupt_file)) << render(error_of(loaded));
  EXPECT_TRUE(
    ask<embedding_stats>(sys, shard, test::patience, stats_atom::value, std::string{"old"}));
}

TEST_F(shard_checkpoint_test, ALoaderNoticeForNoLoadIsRefused) {
  auto shard = sys.spawn(embedding_shard, uint32_t{0});
  test::stop_on_exit stop{sys, caf::actor_cast<caf::actor>(shard)};
  auto notice = ask<ok_atom>(sys, shard, test::patience, load_part_atom::value, dir, manifest,
                             uint32_t{0}, uint32_t{0}, uint64_t{9});
  ASSERT_FALSE(notice);
  EXPECT_TRUE(is(error_of(notice), errc::invalid_argument));
}

} // namespace
} // namespace darcy::actors
