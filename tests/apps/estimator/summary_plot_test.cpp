// The summary plot: a summary_writer's JSONL becomes a TSV of its points and a PNG; damaged
// or empty files are refused with the line named.
#include "apps/estimator/summary_plot.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::apps {
namespace {

TEST(summary_plot, a_summary_becomes_a_tsv_and_a_png) {
  test::temp_dir dir{"summary_plot"};
  auto jsonl = dir.path() + "/summary.jsonl";
  std::ofstream{jsonl} << "{\"step\":10,\"loss\":2.5,\"seconds\":0.5}\n\n"
                       << "{\"step\":20,\"loss\":1.25,\"seconds\":1.0}\n";
  auto points = plot_summary(jsonl, dir.path() + "/loss");
  ASSERT_TRUE(points) << render(points.error());
  EXPECT_EQ(*points, 2u);
  std::ifstream tsv{dir.path() + "/loss.tsv"};
  std::string all{std::istreambuf_iterator<char>{tsv}, {}};
  EXPECT_EQ(all, "step\tloss\tseconds\n10\t2.5\t0.5\n20\t1.25\t1\n");
  EXPECT_GT(std::filesystem::file_size(dir.path() + "/loss.png"), 0u);
}

TEST(summary_plot, damaged_missing_or_empty_summaries_are_refused) {
  test::temp_dir dir{"summary_plot_bad"};
  std::ofstream{dir.path() + "/bad.jsonl"} << "{\"step\":1,\"loss\":2}\n{\"step\":\"x\"}\n";
  std::ofstream{dir.path() + "/empty.jsonl"} << "\n";
  struct {
    const char* what;
    std::string file;
    errc expected;
  } cases[] = {
    {"a line without numbers", "bad.jsonl", errc::corrupt_file},
    {"no points", "empty.jsonl", errc::invalid_argument},
    {"no file", "none.jsonl", errc::not_found},
  };
  for (auto& c : cases) {
    auto r = plot_summary(dir.path() + "/" + c.file, dir.path() + "/out");
    ASSERT_FALSE(r) << c.what;
    EXPECT_TRUE(is(r.error(), c.expected)) << c.what << ": " << render(r.error());
  }
}

} // namespace
} // namespace darcy::apps
