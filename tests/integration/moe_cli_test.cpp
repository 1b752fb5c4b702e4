// `darcy moe lm`'s defaults: whatever the expert kind, a MoE layer left at its defaults costs
// the dense row's 8d² multiply-adds per word (plus its gate), so the rows stay matched. The
// sweep's own default, the importance loss, gives way to a value given.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/node_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tiny_brown.hpp"

namespace darcy::test {
namespace {

/// The small model of these tests: one step on a tiny corpus.
std::vector<std::string> tiny_model(const std::string& corpus) {
  return {"--corpus",  corpus, "--dim",     "16", "--batch",     "4", "--unroll", "5",
          "--sampled", "4",    "--threads", "1",  "--max-steps", "1", "--quiet"};
}

/// The JSON lines of a command's standard output.
std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  for (size_t at = 0; at < out.size();) {
    auto end = std::min(out.find('\n', at), out.size());
    auto j = nlohmann::json::parse(out.substr(at, end - at), nullptr, false);
    if (!j.is_discarded() && j.is_object())
      lines.push_back(std::move(j));
    at = end + 1;
  }
  return lines;
}

/// The multiply-adds per word that `darcy moe lm ARGS` reports after one step on `corpus`.
double multiply_adds(const std::string& corpus, std::vector<std::string> args) {
  std::vector<std::string> all{"moe", "lm", "--experts", "16"};
  for (auto& a : tiny_model(corpus))
    all.push_back(a);
  all.insert(all.end(), args.begin(), args.end());
  auto r = run_darcy(all);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto lines = json_lines(r.out);
  EXPECT_EQ(lines.size(), 1u) << r.out;
  return lines.empty() ? 0 : lines.back().value("multiply_adds_per_word", 0.0);
}

TEST(moe_cli, lm_experts_left_at_their_defaults_cost_what_the_dense_row_costs) {
  temp_dir dir{"moe_cli_defaults"};
  write_tiny_brown(dir.path());
  constexpr double d = 16, gate = d * 16;
  auto dense = multiply_adds(dir.path(), {"--middle", "lstm"});
  ASSERT_GT(dense, 8 * d * d);
  struct {
    const char* what;
    std::vector<std::string> args;
    double over_dense;
  } cases[] = {
    {"linear d x d experts at k = 8 (the default)", {}, gate},
    {"ffn experts d -> 2d -> d at k = 2", {"--expert", "ffn"}, gate},
    {"linear experts at -k 4", {"-k", "4"}, gate - 4 * d * d},
    {"ffn experts at -k 1", {"--expert", "ffn", "-k", "1"}, gate - 4 * d * d},
  };
  for (auto& c : cases)
    EXPECT_DOUBLE_EQ(multiply_adds(dir.path(), c.args), dense + c.over_dense) << c.what;
}

TEST(moe_cli, a_sweep_trains_with_the_importance_loss_unless_a_weight_is_given) {
  temp_dir dir{"moe_cli_sweep"};
  write_tiny_brown(dir.path());
  struct {
    std::vector<std::string> args;
    double weight;
  } cases[] = {{{}, 0.1}, {{"--importance-weight", "0"}, 0}, {{"--importance-weight", "0.3"}, 0.3}};
  for (auto& c : cases) {
    std::vector<std::string> all{"moe",      "experiment", "experts", "--expert-counts",  "4",
                                 "--groups", "0",          "--out",   dir.path() + "/out"};
    for (auto& a : tiny_model(dir.path()))
      all.push_back(a);
    all.insert(all.end(), c.args.begin(), c.args.end());
    auto r = run_darcy(all);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 2u) << r.out;
    EXPECT_EQ(lines[0]["model"], "dense-lstm");
    EXPECT_TRUE(lines[0]["gating"].is_null()) << lines[0];
    EXPECT_EQ(lines[1]["model"], "moe-4");
    EXPECT_DOUBLE_EQ(lines[1]["gating"].value("importance_weight", -1.0), c.weight) << lines[1];
    EXPECT_EQ(lines[1]["gating"].value("k", 0), 4) << "a row of 4 experts uses them all";
  }
}

} // namespace
} // namespace darcy::test
