// `darcy demo`, the main job of `make demo`, as the Makefile runs it: DE-Word2Vec on a corpus
// in the Brown format, in an in-process cluster whose rows live in LevelDB, ending with
// neighbours, the score on the similarity set the repository carries, and a checkpoint.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/integration/node_process.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

namespace fs = std::filesystem;

/// 30 documents of the Brown format, each two tagged sentences over a few words of the demo's
/// neighbour list.
void write_brown(const std::string& dir) {
  fs::create_directories(dir);
  std::ofstream cats{dir + "/cats.txt"};
  const char* sentences[] = {"the/at man/nn had/hvd money/nn ./.",
                             "the/at city/nn was/bedz at/in war/nn ./.",
                             "a/at good/jj man/nn in/in the/at city/nn ./."};
  for (int d = 0; d < 30; ++d) {
    auto name = "cd" + std::to_string(d);
    cats << name << " news\n";
    std::ofstream doc{dir + "/" + name};
    doc << sentences[d % 3] << "\n" << sentences[(d + 1) % 3] << "\n";
  }
}

TEST(demo_cli, trains_on_brown_with_its_rows_in_leveldb_and_saves_a_checkpoint) {
  temp_dir tmp{"demo_cli"};
  write_brown(tmp.path() + "/brown");
  auto store = tmp.path() + "/store";
  // A store left by an earlier demo is emptied first: the demo always starts fresh.
  fs::create_directories(store + "/stale");
  auto similarity = std::string{DARCY_SOURCE_DIR} + "/apps/word2vec/data/brown-relatedness.tsv";
  auto r = run_darcy({"demo", "--corpus", tmp.path() + "/brown", "--eval-dir",
                      tmp.path() + "/no-eval", "--similarity", similarity, "--checkpoint",
                      tmp.path() + "/checkpoint", "--store", store});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on LevelDB in " + store), std::string::npos) << r.out;
  // A fresh clone has no evaluation data but the set the repository carries.
  EXPECT_NE(r.out.find("similarity brown-relatedness.tsv: spearman"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("neighbours of 'man':"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(store + "/stale"));
  for (auto table : {"w2v.in", "w2v.out"})
    EXPECT_TRUE(fs::exists(store + "/" + table + "/shard-0/CURRENT"))
      << "no LevelDB database for " << table << " under " << store;
  EXPECT_TRUE(fs::exists(tmp.path() + "/checkpoint/MANIFEST")) << r.out;
}

TEST(demo_cli, a_missing_similarity_set_is_one_error_line_before_training) {
  temp_dir tmp{"demo_cli_no_set"};
  auto r = run_darcy({"demo", "--corpus", tmp.path() + "/brown", "--similarity",
                      tmp.path() + "/none.tsv", "--store", tmp.path() + "/store"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "darcy: error: demo: --similarity: no file " + tmp.path() +
                     "/none.tsv (run the demo from the repository's root, or give the file)\n");
}

} // namespace
} // namespace darcy::test
