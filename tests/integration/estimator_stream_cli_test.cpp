// `darcy estimator ctr --stream` as a user runs it: a training process SIGKILLed in the middle
// of its stream, started again with the same --sync-dir, resumes after the rows of its last
// sync instead of starting over.
#include <csignal>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/process/process.hpp"
#include "tests/integration/node_process.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

using namespace std::chrono_literals;

/// The arguments after `darcy` of a small DLRM on the generated stream, syncing each window.
std::vector<std::string> stream_args(const std::string& sync_dir, const std::string& windows) {
  return {"estimator",    "ctr",  "--stream",  "generate", "--max-ids",  "1000",
          "--window",     "1000", "--windows", windows,    "--sync-dir", sync_dir,
          "--sync-every", "0",    "--bottom",  "64,16",    "--top",      "64",
          "--threads",    "1",    "--quiet"};
}

TEST(estimator_stream_cli, a_killed_stream_run_resumes_after_the_rows_of_its_last_sync) {
  temp_dir tmp{"stream_resume"};
  auto sync_dir = tmp.path() + "/sync";
  auto args = stream_args(sync_dir, "0");
  args.insert(args.begin(), DARCY_BINARY);
  auto first = runtime::child_process::start(args);
  ASSERT_TRUE(first) << render(first.error());
  uint64_t seen = 0;
  for (int w = 0; w < 3; ++w) {
    auto line = first->wait_for_line("\"window\"", 120s);
    ASSERT_TRUE(line) << render(line.error()) << first->read_stderr();
    auto j = nlohmann::json::parse(*line);
    EXPECT_FALSE(j.value("sync_checkpoint", "").empty()) << *line;
    seen = j.value("rows", uint64_t{0});
  }
  first->signal(SIGKILL);
  ASSERT_TRUE(first->wait(60s));

  auto again = run_darcy(stream_args(sync_dir, "1"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto j = nlohmann::json::parse(again.out.substr(again.out.find('{')), nullptr, false);
  ASSERT_TRUE(j.is_object()) << again.out;
  auto rows = j.value("rows", uint64_t{0});
  // The kill may land after one more window was synced.
  EXPECT_GE(rows, seen + 1000) << again.out;
  EXPECT_EQ(rows % 1000, 0u) << again.out;
  EXPECT_LE(rows, seen + 1000 * 5) << "resumed near where it died, not from the start";
  EXPECT_NE(again.err.find("resumed from"), std::string::npos) << again.err;
}

} // namespace
} // namespace darcy::test
