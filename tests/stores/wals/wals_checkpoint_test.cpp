#include "stores/wals/wals_checkpoint.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_io.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

class wals_checkpoint_test : public ::testing::Test {
protected:
  test::temp_dir temp{"walsck"};
  std::string dir = temp.path();
  float_matrix rows{2, 3, {1, 2, 3, 4, 5, 6}};
};

TEST_F(wals_checkpoint_test, FactorPartsRoundTripByShardAndSide) {
  checkpoint_dir root{dir};
  auto id = checkpoint_dir::new_id("sweep-0");
  checkpoint_manifest m;
  m.service = wals_service_name;
  m.checkpoint = id;
  m.wals = {42, {1.5, 0.5}};
  for (auto side : {wals_side::rows, wals_side::cols}) {
    auto part = write_factor_part(root, id, side, 1, 2, rows);
    ASSERT_TRUE(part) << render(part.error());
    EXPECT_EQ(part->rows, 2u);
    m.parts.push_back(*part);
  }
  ASSERT_FALSE(root.commit(m));
  auto read = read_wals_checkpoint(root);
  ASSERT_TRUE(read) << render(read.error());
  EXPECT_EQ(read->wals.run_id, 42u);
  EXPECT_EQ(read->wals.losses, (std::vector<double>{1.5, 0.5}));
  auto back = read_factor_part(root, *read, wals_side::cols, 1, 2);
  ASSERT_TRUE(back) << render(back.error());
  EXPECT_EQ(back->values, rows.values);
  // Another layout's shard has no part here.
  EXPECT_TRUE(
    is(error_of(read_factor_part(root, *read, wals_side::cols, 0, 3)), errc::corrupt_file));
}

TEST_F(wals_checkpoint_test, Format1CheckpointReadsWithItsRunSweepLossesAndFiles) {
  fs::create_directories(dir + "/sweep-4");
  std::ofstream{dir + "/chief.state"}
    << "run_id 77\nsweep 4\nphase rows\ncommitted\nlosses 3.25 2.5 2 1.75 1.5\n";
  ASSERT_FALSE(write_matrix_file(dir + "/sweep-4/rows-0-of-1.f32", rows));
  checkpoint_dir root{dir};
  auto m = read_wals_checkpoint(root);
  ASSERT_TRUE(m) << render(m.error());
  EXPECT_EQ(m->service, wals_service_name);
  EXPECT_EQ(m->step, 4);
  EXPECT_EQ(m->wals.run_id, 77u);
  EXPECT_EQ(m->wals.losses, (std::vector<double>{3.25, 2.5, 2, 1.75, 1.5}));
  auto back = read_factor_part(root, *m, wals_side::rows, 0, 1);
  ASSERT_TRUE(back) << render(back.error());
  EXPECT_EQ(back->values, rows.values);
}

// Issue 12, item 13: a garbage chief.state is said, not silently taken for "no checkpoint".
TEST_F(wals_checkpoint_test, FindPassesOverDamagedCheckpointsAndSaysWhy) {
  checkpoint_dir root{dir};
  std::vector<std::string> skipped;
  EXPECT_TRUE(is(error_of(find_wals_checkpoint(root, 7, skipped)), errc::not_found));
  EXPECT_TRUE(skipped.empty());
  std::ofstream{dir + "/chief.state"} << "\x01\x02 garbage";
  EXPECT_TRUE(is(error_of(find_wals_checkpoint(root, 7, skipped)), errc::not_found));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("chief.state"), std::string::npos) << skipped[0];
  // Two checkpoints of run 7; the newer one's part is then damaged.
  std::vector<checkpoint_manifest> saved;
  for (int sweep : {0, 1}) {
    checkpoint_manifest m;
    m.service = wals_service_name;
    m.checkpoint = checkpoint_dir::new_id("sweep-" + std::to_string(sweep));
    m.step = sweep;
    m.wals.run_id = 7;
    auto part = write_factor_part(root, m.checkpoint, wals_side::rows, 0, 1, rows);
    ASSERT_TRUE(part);
    m.parts.push_back(*part);
    ASSERT_FALSE(root.commit(m, wals_checkpoints_kept));
    saved.push_back(m);
  }
  std::ofstream{dir + "/" + saved[1].parts[0].path, std::ios::app} << "x";
  skipped.clear();
  auto found = find_wals_checkpoint(root, 7, skipped);
  ASSERT_TRUE(found) << render(found.error());
  EXPECT_EQ(found->step, 0);
  ASSERT_FALSE(skipped.empty());
  EXPECT_NE(skipped[0].find("size or checksum"), std::string::npos) << skipped[0];
  // Another run's checkpoints are never taken.
  skipped.clear();
  EXPECT_FALSE(find_wals_checkpoint(root, 8, skipped));
}

TEST_F(wals_checkpoint_test, GarbageStateOrAnotherServicesManifestIsCorrupt) {
  checkpoint_dir root{dir};
  EXPECT_TRUE(is(error_of(read_wals_checkpoint(root)), errc::not_found));
  std::ofstream{dir + "/chief.state"} << "\x01\x02 garbage";
  EXPECT_TRUE(is(error_of(read_wals_checkpoint(root)), errc::corrupt_file));
  checkpoint_manifest embedding;
  embedding.service = embedding_service_name;
  ASSERT_FALSE(write_manifest(dir, embedding));
  EXPECT_TRUE(is(error_of(read_wals_checkpoint(root)), errc::corrupt_file));
}

} // namespace
} // namespace darcy::stores
