// A SIGKILL in the middle of a save leaves a restorable checkpoint: the previous one, or the
// new one if its manifest made it to disk, and never a mix.
#include <csignal>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/process/process.hpp"
#include "tests/support/checkpoint_drill.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::test {
namespace {

namespace fs = std::filesystem;

class checkpoint_kill_test : public system_fixture {};

// True once any file exists below a checkpoint directory whose name starts with `prefix`.
bool save_file_exists(const std::string& dir, const std::string& prefix) {
  std::error_code ec;
  for (auto& top : fs::directory_iterator(dir, ec)) {
    if (top.path().filename().string().rfind(prefix, 0) != 0)
      continue;
    for (auto& entry : fs::recursive_directory_iterator(top.path(), ec))
      if (entry.is_regular_file(ec))
        return true;
  }
  return false;
}

TEST_F(checkpoint_kill_test, SigkillDuringSaveLeavesACheckpointThatRestoresExactly) {
  auto dir = (fs::temp_directory_path() / ("darcy_kill_" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto writer = runtime::child_process::start({DARCY_CHECKPOINT_WRITER, dir, "100000"});
  ASSERT_TRUE(writer) << render(error_of(writer));
  ASSERT_TRUE(writer->wait_for_line("saved 2", std::chrono::minutes(2))) << writer->read_stderr();
  ASSERT_TRUE(writer->wait_for_line("saving 3", std::chrono::minutes(2)));
  // Kill while save 3 writes its shard files: wait for the first of them to appear on disk.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (!save_file_exists(dir, "ckpt-3") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  writer->signal(SIGKILL);
  auto code = writer->wait(patience);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 128 + SIGKILL);

  auto restored_service = start_drill_service(sys, 3);
  auto manifest =
    runtime::ask<checkpoint_manifest>(sys, restored_service, patience, restore_atom::value, dir);
  ASSERT_TRUE(manifest) << render(error_of(manifest));
  ASSERT_TRUE(manifest->step == 2 || manifest->step == 3) << manifest->step;

  // Replay the writer in-process up to the restored step and compare.
  auto replay = start_drill_service(sys, 2);
  ASSERT_FALSE(drill_setup(sys, replay, 100000));
  for (int step = 1; step <= manifest->step; ++step)
    ASSERT_FALSE(drill_step(sys, replay, step));
  auto expected = drill_probe(sys, replay);
  auto actual = drill_probe(sys, restored_service);
  ASSERT_TRUE(expected && actual);
  EXPECT_EQ(*actual, *expected) << "restored step " << manifest->step;
  fs::remove_all(dir);
}

} // namespace
} // namespace darcy::test
