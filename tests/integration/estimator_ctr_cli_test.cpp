// `darcy estimator ctr` as a user runs it on files `darcy data ctr` wrote: Wide & Deep with every
// table in LevelDB behind a 1 MiB budget (which used to fail on the first wide table, which kept
// its deep table's databases) trains, evaluates and gives each table databases of its own.
#include <filesystem>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/node_process.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

TEST(estimator_ctr_cli, wide_and_deep_with_every_table_on_leveldb_behind_1_mib_trains) {
  temp_dir dir{"estimator_ctr_cli"};
  for (auto [name, first, rows] : {std::tuple{"train", "0", "20000"}, {"test", "20000", "5000"}}) {
    auto r = run_darcy({"data", "ctr", "--rows", rows, "--first-row", first, "--max-ids", "1000",
                        "--out", dir.path() + "/" + name + ".tsv"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto db = dir.path() + "/db";
  auto r =
    run_darcy({"estimator", "ctr", "--train", dir.path() + "/train.tsv", "--eval",
               dir.path() + "/test.tsv", "--model", "wide-deep", "--leveldb", db, "--memory-budget",
               "1MiB", "--hidden", "32,16", "--embedding-dim", "8", "--threads", "1", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out.substr(r.out.rfind("\n{") + 1), nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j.value("model", ""), "wide-deep");
  EXPECT_EQ(j.value("train_examples", 0), 20000);
  EXPECT_GT(j.value("auc", 0.0), 0.6) << r.out;
  EXPECT_GT(j.value("disk_bytes", 0), 0) << "the rows live in LevelDB";
  EXPECT_LT(10 * j.value("cached_rows", uint64_t{0}), j.value("embedding_rows", uint64_t{0}))
    << "most rows on disk, behind the budget: " << r.out;
  for (auto table : {"ctr_C1", "ctr_wide_C1", "ctr_X1_2"})
    EXPECT_TRUE(std::filesystem::is_directory(db + "/" + table + "/shard-0")) << table;
}

} // namespace
} // namespace darcy::test
