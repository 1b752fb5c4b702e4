// The summary plot: a summary_writer's JSONL becomes a TSV of its points and a PNG; lines a
// killed writer tore and non-finite losses are skipped and counted; damaged or empty files are
// refused with the line named.
#include "apps/estimator/summary_plot.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::estimator_apps {
namespace {

TEST(summary_plot, a_summary_becomes_a_tsv_and_a_png) {
  test::temp_dir dir{"summary_plot"};
  auto jsonl = dir.path() + "/summary.jsonl";
  std::ofstream{jsonl} << "{\"step\":10,\"loss\":2.5,\"seconds\":0.5}\n\n"
                       << "{\"step\":20,\"loss\":1.25,\"seconds\":1.0}\n";
  auto plot = plot_summary(jsonl, dir.path() + "/loss");
  ASSERT_TRUE(plot) << render(plot.error());
  EXPECT_EQ(plot->points, 2u);
  std::ifstream tsv{dir.path() + "/loss.tsv"};
  std::string all{std::istreambuf_iterator<char>{tsv}, {}};
  EXPECT_EQ(all, "step\tloss\tseconds\n10\t2.5\t0.5\n20\t1.25\t1\n");
  EXPECT_GT(std::filesystem::file_size(dir.path() + "/loss.png"), 0u);
}

TEST(summary_plot, torn_lines_and_non_finite_losses_are_skipped_and_counted) {
  test::temp_dir dir{"summary_plot_torn"};
  struct {
    const char* what;
    std::string content;
    size_t points, torn, non_finite;
    std::string tsv;
  } cases[] = {
    {"a torn last line", "{\"step\":1,\"loss\":2}\n{\"step\":2,\"lo", 1, 1, 0, "1\t2\t0\n"},
    {"a torn line a resumed writer left behind",
     "{\"step\":1,\"loss\":2}\n{\"step\":2,\"loss\":1.\n{\"step\":2,\"loss\":1.5}\n", 2, 1, 0,
     "1\t2\t0\n2\t1.5\t0\n"},
    {"a line torn before its key", "{\"st\n{\"step\":1,\"loss\":2}\n", 1, 1, 0, "1\t2\t0\n"},
    {"a NaN loss (null)", "{\"step\":1,\"loss\":2}\n{\"step\":2,\"loss\":null}\n", 1, 0, 1,
     "1\t2\t0\n"},
  };
  for (auto& c : cases) {
    std::ofstream{dir.path() + "/s.jsonl"} << c.content;
    auto plot = plot_summary(dir.path() + "/s.jsonl", dir.path() + "/out");
    ASSERT_TRUE(plot) << c.what << ": " << render(plot.error());
    EXPECT_EQ(plot->points, c.points) << c.what;
    EXPECT_EQ(plot->torn_lines, c.torn) << c.what;
    EXPECT_EQ(plot->non_finite, c.non_finite) << c.what;
    std::ifstream tsv{dir.path() + "/out.tsv"};
    std::string all{std::istreambuf_iterator<char>{tsv}, {}};
    EXPECT_EQ(all, "step\tloss\tseconds\n" + c.tsv) << c.what;
  }
}

TEST(summary_plot, damaged_missing_or_empty_summaries_are_refused) {
  test::temp_dir dir{"summary_plot_bad"};
  std::ofstream{dir.path() + "/bad.jsonl"} << "{\"step\":1,\"loss\":2}\n{\"step\":\"x\"}\n";
  std::ofstream{dir.path() + "/other.jsonl"} << "{\"step\":1,\"loss\":2}\nhello\n";
  std::ofstream{dir.path() + "/empty.jsonl"} << "\n";
  std::ofstream{dir.path() + "/all_torn.jsonl"} << "{\"step\":1,\"lo";
  struct {
    const char* what;
    std::string file;
    errc expected;
  } cases[] = {
    {"a line without numbers", "bad.jsonl", errc::corrupt_file},
    {"a line that is no summary at all", "other.jsonl", errc::corrupt_file},
    {"no points", "empty.jsonl", errc::invalid_argument},
    {"nothing but a torn line", "all_torn.jsonl", errc::invalid_argument},
    {"no file", "none.jsonl", errc::not_found},
  };
  for (auto& c : cases) {
    auto r = plot_summary(dir.path() + "/" + c.file, dir.path() + "/out");
    ASSERT_FALSE(r) << c.what;
    EXPECT_TRUE(is(r.error(), c.expected)) << c.what << ": " << render(r.error());
  }
}

} // namespace
} // namespace darcy::estimator_apps
