#include "stores/checkpoint/checkpoint_dir.hpp"

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "base/atomic_file.hpp"
#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

class checkpoint_dir_test : public ::testing::Test {
protected:
  // A checkpoint of two parts, committed.
  checkpoint_manifest save(const checkpoint_dir& root, const std::string& label) {
    auto id = checkpoint_dir::new_id(label);
    checkpoint_manifest m;
    m.service = wals_service_name;
    m.checkpoint = id;
    for (auto name : {"a", "b"}) {
      auto part = root.write_part(id + "/" + name, label + name, 1);
      EXPECT_TRUE(part) << render(part.error());
      m.parts.push_back(*part);
    }
    EXPECT_FALSE(root.commit(m));
    return m;
  }

  test::temp_dir temp{"ckdir"};
  std::string dir = temp.path();
};

TEST_F(checkpoint_dir_test, CommittedManifestNamesItsPartsAndRemovesOlderCheckpoints) {
  checkpoint_dir root{dir};
  ASSERT_FALSE(root.prepare());
  auto first = save(root, "1");
  // A crashed save leaves a temporary file and a checkpoint directory without a manifest.
  ASSERT_FALSE(base::write_file_atomically(dir + "/orphan", "x"));
  std::ofstream{dir + "/MANIFEST.tmp.999"} << "half";
  auto orphan = checkpoint_dir::new_id("orphan");
  ASSERT_TRUE(root.write_part(orphan + "/a", "x"));
  auto second = save(root, "2");

  auto read = root.read_manifest();
  ASSERT_TRUE(read) << render(read.error());
  EXPECT_EQ(read->checkpoint, second.checkpoint);
  ASSERT_EQ(read->parts.size(), 2u);
  for (auto& part : read->parts) {
    auto bytes = root.read_part(part);
    ASSERT_TRUE(bytes) << render(bytes.error());
    EXPECT_EQ(bytes->substr(0, 1), "2");
  }
  EXPECT_FALSE(fs::exists(dir + "/" + first.checkpoint));
  EXPECT_FALSE(fs::exists(dir + "/" + orphan));
  EXPECT_FALSE(fs::exists(dir + "/MANIFEST.tmp.999"));
  EXPECT_TRUE(fs::exists(dir + "/orphan")) << "only checkpoints and temporaries are removed";
}

TEST_F(checkpoint_dir_test, KeepRetainsTheNewestCheckpointsEachWithItsManifest) {
  checkpoint_dir root{dir};
  std::vector<checkpoint_manifest> saved;
  for (auto label : {"1", "2", "3"}) {
    auto id = checkpoint_dir::new_id(label);
    checkpoint_manifest m;
    m.service = wals_service_name;
    m.checkpoint = id;
    auto part = root.write_part(id + "/a", label);
    ASSERT_TRUE(part);
    m.parts.push_back(*part);
    ASSERT_FALSE(root.commit(m, 2));
    saved.push_back(m);
  }
  EXPECT_EQ(root.checkpoints(),
            (std::vector<std::string>{saved[2].checkpoint, saved[1].checkpoint}));
  auto older = root.read_manifest_of(saved[1].checkpoint);
  ASSERT_TRUE(older) << render(older.error());
  EXPECT_FALSE(root.verify(*older));
  std::ofstream{dir + "/" + saved[1].parts[0].path} << "changed";
  EXPECT_TRUE(is(root.verify(*older), errc::corrupt_file));
}

TEST_F(checkpoint_dir_test, DamagedPartsFailWithCorruptFileNamingThem) {
  checkpoint_dir root{dir};
  auto m = save(root, "1");
  auto path = dir + "/" + m.parts[0].path;
  struct damage {
    const char* what;
    void (*apply)(const std::string&);
  } cases[] = {
    {"flipped byte", [](const std::string& p) { std::ofstream{p} << "1b"; }},
    {"truncated", [](const std::string& p) { fs::resize_file(p, 1); }},
    {"missing", [](const std::string& p) { fs::remove(p); }},
  };
  for (auto& c : cases) {
    ASSERT_FALSE(base::write_file_atomically(path, "1a"));
    c.apply(path);
    auto bytes = root.read_part(m.parts[0]);
    ASSERT_FALSE(bytes) << c.what;
    EXPECT_TRUE(is(bytes.error(), errc::corrupt_file)) << c.what;
    EXPECT_NE(render(bytes.error()).find(m.parts[0].path), std::string::npos) << c.what;
  }
}

TEST_F(checkpoint_dir_test, DiscardRemovesOnlyCheckpointDirectories) {
  checkpoint_dir root{dir};
  auto id = checkpoint_dir::new_id("3");
  ASSERT_TRUE(root.write_part(id + "/a", "x"));
  root.discard(id);
  EXPECT_FALSE(fs::exists(dir + "/" + id));
  ASSERT_FALSE(base::write_file_atomically(dir + "/keep", "x"));
  root.discard("keep");
  EXPECT_TRUE(fs::exists(dir + "/keep"));
}

TEST_F(checkpoint_dir_test, MissingManifestIsNotFoundAndAnUnusableRootIsAnIoError) {
  checkpoint_dir root{dir};
  EXPECT_TRUE(is(error_of(root.read_manifest()), errc::not_found));
  ASSERT_FALSE(base::write_file_atomically(dir + "-file", "x"));
  EXPECT_TRUE(is(checkpoint_dir{dir + "-file/sub"}.prepare(), errc::io_error));
  fs::remove(dir + "-file");
}

// A client may name a version (serving's :load): only a folder name inside the root is read.
TEST_F(checkpoint_dir_test, OnlyANameInsideTheRootIsReadAsACheckpoint) {
  checkpoint_dir root{dir + "/root"};
  auto m = save(root, "named");
  struct {
    std::string id;
    bool accepted;
  } cases[] = {
    {m.checkpoint, true}, {"3", true}, // a name; not found, but not refused
    {"", false},          {".", false},   {"..", false},   {"../outside", false},
    {"/etc", false},      {"a/b", false}, {"a\\b", false}, {std::string{"a\0b", 3}, false},
  };
  for (auto& c : cases) {
    auto named = check_checkpoint_name(c.id);
    EXPECT_EQ(!named, c.accepted) << c.id;
    auto read = root.read_manifest_of(c.id);
    if (c.accepted)
      continue;
    ASSERT_FALSE(read) << c.id;
    EXPECT_TRUE(is(read.error(), errc::invalid_argument)) << c.id;
    EXPECT_EQ(render(read.error()).find(dir), std::string::npos) << render(read.error());
  }
  EXPECT_TRUE(root.read_manifest_of(m.checkpoint));
}

TEST_F(checkpoint_dir_test, NewIdsAreUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i)
    EXPECT_TRUE(ids.insert(checkpoint_dir::new_id("x")).second);
}

} // namespace
} // namespace darcy::stores
