// A node's file store: writes what it is sent at absolute paths, folders included, reads back
// what it is asked for, says which files it lacks, lists and removes checkpoint folders, and
// refuses paths that are relative or climb with "..".
#include "actors/cluster/file_store.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "base/atomic_file.hpp"
#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

class file_store_test : public test::system_fixture {};

TEST_F(file_store_test, writes_and_reads_at_absolute_paths_and_refuses_the_others) {
  test::temp_dir dir{"file_store"};
  auto store = sys.spawn(file_store);
  test::stop_on_exit stop{sys, caf::actor_cast<caf::actor>(store)};
  struct write_case {
    const char* what;
    std::string path;
    errc refused; // errc{}: written
  };
  for (auto& c : std::vector<write_case>{
         {"a file in new folders", dir.path() + "/a/b/part", errc{}},
         {"the same file again", dir.path() + "/a/b/part", errc{}},
         {"a relative path", "a/b/part", errc::invalid_argument},
         {"a path that climbs", dir.path() + "/a/../../escape", errc::invalid_argument},
       }) {
    SCOPED_TRACE(c.what);
    auto bytes = std::string{"bytes of "} + c.what;
    auto ok = runtime::ask<ok_atom>(sys, store, test::patience, write_atom::value, c.path, bytes);
    auto read = runtime::ask<std::string>(sys, store, test::patience, fetch_atom::value, c.path);
    if (c.refused != errc{}) {
      ASSERT_FALSE(ok);
      EXPECT_TRUE(is(ok.error(), c.refused)) << render(ok.error());
      ASSERT_FALSE(read);
      EXPECT_TRUE(is(read.error(), c.refused)) << render(read.error());
      continue;
    }
    ASSERT_TRUE(ok) << render(ok.error());
    ASSERT_TRUE(read) << render(read.error());
    EXPECT_EQ(*read, bytes);
    EXPECT_EQ(*base::read_file(c.path), bytes);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/../escape"));
  auto missing =
    runtime::ask<std::string>(sys, store, test::patience, fetch_atom::value, dir.path() + "/none");
  ASSERT_FALSE(missing);
  EXPECT_TRUE(is(missing.error(), errc::not_found)) << render(missing.error());
}

TEST_F(file_store_test, says_which_files_it_lacks_or_holds_at_another_size) {
  test::temp_dir dir{"file_store_stats"};
  auto store = sys.spawn(file_store);
  test::stop_on_exit stop{sys, caf::actor_cast<caf::actor>(store)};
  ASSERT_FALSE(base::write_file_atomically(dir.path() + "/held", "12345"));
  std::vector<file_info> asked{{dir.path() + "/held", 0, 0, 5},
                               {dir.path() + "/resized", 0, 0, 3},
                               {dir.path() + "/absent", 0, 0, 1}};
  ASSERT_FALSE(base::write_file_atomically(dir.path() + "/resized", "1234"));
  auto lacking =
    runtime::ask<std::vector<std::string>>(sys, store, test::patience, stats_atom::value, asked);
  ASSERT_TRUE(lacking) << render(lacking.error());
  EXPECT_EQ(*lacking, (std::vector<std::string>{dir.path() + "/resized", dir.path() + "/absent"}));
}

TEST_F(file_store_test, lists_and_removes_the_checkpoint_folders_it_is_named_and_no_other) {
  test::temp_dir dir{"file_store_prune"};
  for (auto* rel : {"ckpt-a-1/t/shard-0", "ckpt-b-2/t/shard-0", "dense/1/part", "ckpt-file"}) {
    std::filesystem::create_directories(
      std::filesystem::path{dir.path() + "/" + rel}.parent_path());
    ASSERT_FALSE(base::write_file_atomically(dir.path() + "/" + rel, rel));
  }
  auto store = sys.spawn(file_store);
  test::stop_on_exit stop{sys, caf::actor_cast<caf::actor>(store)};
  using names = std::vector<std::string>;
  auto listed = [&](const std::string& root) {
    return runtime::ask<names>(sys, store, test::patience, prune_atom::value, root);
  };
  auto held = listed(dir.path());
  ASSERT_TRUE(held) << render(held.error());
  EXPECT_EQ(*held, (names{"ckpt-a-1", "ckpt-b-2"})); // not dense/, not a file
  auto none = listed(dir.path() + "/absent");
  ASSERT_TRUE(none) << render(none.error());
  EXPECT_TRUE(none->empty());
  struct remove_case {
    const char* what;
    names asked;
    errc refused; // errc{}: removed
    uint64_t removed;
  };
  for (auto& c : std::vector<remove_case>{
         {"a folder that is not a checkpoint's", {"dense"}, errc::invalid_argument, 0},
         {"a name that climbs", {"ckpt-a-1/../../x"}, errc::invalid_argument, 0},
         {"one checkpoint and one already gone", {"ckpt-a-1", "ckpt-gone"}, errc{}, 1},
       }) {
    SCOPED_TRACE(c.what);
    auto removed =
      runtime::ask<uint64_t>(sys, store, test::patience, prune_atom::value, dir.path(), c.asked);
    if (c.refused != errc{}) {
      ASSERT_FALSE(removed);
      EXPECT_TRUE(is(removed.error(), c.refused)) << render(removed.error());
      continue;
    }
    ASSERT_TRUE(removed) << render(removed.error());
    EXPECT_EQ(*removed, c.removed);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/ckpt-a-1"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/ckpt-b-2/t/shard-0"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/dense/1/part"));
  auto relative = listed("relative/root");
  ASSERT_FALSE(relative);
  EXPECT_TRUE(is(relative.error(), errc::invalid_argument)) << render(relative.error());
}

} // namespace
} // namespace darcy::actors
