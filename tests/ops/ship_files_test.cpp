// What ship_files sends: the files under a folder, sorted, subfolders left out by name; and
// nothing at all sent or fetched for an in-process session, whose shards use this host's disk.
#include "ops/ship_files.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops {
namespace {

TEST(ship_files, files_under_a_folder_are_listed_sorted_without_the_skipped_subfolders) {
  test::temp_dir dir{"ship_files"};
  for (auto* rel : {"MANIFEST", "ckpt-2/users/shard-0", "ckpt-1/users/shard-1", "dense/1/part"}) {
    std::filesystem::create_directories(
      std::filesystem::path{dir.path() + "/" + rel}.parent_path());
    std::ofstream{dir.path() + "/" + rel} << rel;
  }
  auto root = std::filesystem::absolute(dir.path()).string();
  struct list_case {
    const char* what;
    std::string folder;
    std::vector<std::string> skip;
    std::vector<std::string> want;
  };
  for (auto& c : std::vector<list_case>{
         {"every file",
          dir.path(),
          {},
          {root + "/MANIFEST", root + "/ckpt-1/users/shard-1", root + "/ckpt-2/users/shard-0",
           root + "/dense/1/part"}},
         {"without dense",
          dir.path(),
          {"dense"},
          {root + "/MANIFEST", root + "/ckpt-1/users/shard-1", root + "/ckpt-2/users/shard-0"}},
         {"a folder that is not there", dir.path() + "/missing", {}, {}},
       }) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(files_under(c.folder, c.skip), c.want);
  }
}

TEST(ship_files, an_in_process_session_needs_nothing_sent_or_fetched) {
  auto s = session::open({});
  ASSERT_TRUE(s) << render(s.error());
  EXPECT_FALSE(ship_files(**s, {}, {"/nonexistent/file"}));
  EXPECT_FALSE(fetch_files(**s, {}, {{"/nonexistent/file", 0, 0, 1}}));
}

} // namespace
} // namespace darcy::ops
