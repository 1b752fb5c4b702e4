// `darcy data ctr`: the same seed writes the same bytes, the file reads back as Criteo rows, and
// the Bayes-optimal AUC it prints is the AUC of the probabilities it wrote against the labels.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compute/estimator/metrics.hpp"
#include "messages/error.hpp"
#include "stores/data/ctr_file.hpp"
#include "tests/integration/node_process.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json last_json_line(const std::string& out) {
  auto at = out.rfind("\n{");
  return nlohmann::json::parse(out.substr(at + 1));
}

TEST(data_cli, the_same_seed_writes_the_same_bytes_and_the_printed_bayes_auc_is_the_files) {
  temp_dir dir{"data_cli"};
  auto a = dir.path() + "/a.tsv", b = dir.path() + "/b.tsv";
  for (auto& out : {a, b}) {
    auto r = run_darcy(
      {"data", "ctr", "--rows", "3000", "--out", out, "--seed", "5", "--fresh-rate", "0.05"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(bytes_of(a), bytes_of(b));
  EXPECT_EQ(bytes_of(a + ".probs"), bytes_of(b + ".probs"));
  auto r =
    run_darcy({"data", "ctr", "--rows", "3000", "--out", a, "--seed", "5", "--fresh-rate", "0.05"});
  auto printed = last_json_line(r.out);

  auto in = stores::ctr_reader::open(a);
  ASSERT_TRUE(in);
  std::ifstream probs{a + ".probs"};
  auto auc = *compute::estimator::streaming_metric::make(compute::estimator::metric_kind::auc_roc);
  stores::ctr_row row;
  uint64_t rows = 0, clicks = 0;
  for (;;) {
    auto got = (*in)->next(row);
    ASSERT_TRUE(got) << render(got.error());
    if (!*got)
      break;
    double p = 0;
    ASSERT_TRUE(probs >> p);
    double label = row.label;
    ASSERT_FALSE(auc.update({std::span{&p, 1}, std::span{&label, 1}}));
    ++rows;
    clicks += row.label;
  }
  EXPECT_EQ(rows, 3000u);
  EXPECT_EQ(printed["rows"], rows);
  EXPECT_EQ(printed["clicks"], clicks);
  EXPECT_NEAR(printed["bayes_auc"].get<double>(), auc.value(), 1e-6);
  // The teacher is informative, and far from a perfect separator.
  EXPECT_GT(auc.value(), 0.65);
  EXPECT_LT(auc.value(), 0.95);
}

TEST(data_cli, bad_options_are_one_error_line) {
  struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
    {{"data", "ctr", "--rows", "10", "--out", "/tmp/x.tsv", "--fresh-rate", "2"},
     "darcy: error: data ctr: invalid configuration: ctr data: fresh_rate must be in [0, 1]\n"},
    {{"data", "ctr", "--rows", "0", "--out", "/tmp/x.tsv"},
     "darcy: error: data ctr: invalid configuration: ctr data: give --rows N (at least 1) and "
     "--out FILE\n"},
    {{"data", "ctr", "--rows", "10", "--out", "/nonexistent/dir/x.tsv"},
     "darcy: error: data ctr: I/O error: cannot write /nonexistent/dir/x.tsv\n"},
  };
  for (auto& c : cases) {
    auto r = run_darcy(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.message;
    EXPECT_EQ(r.err, c.message);
  }
}

} // namespace
} // namespace darcy::test
