// `darcy moe lm`'s defaults: whatever the expert kind, a MoE layer left at its defaults costs
// the dense row's 8d² multiply-adds per word (plus its gate), so the rows stay matched.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/node_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tiny_brown.hpp"

namespace darcy::test {
namespace {

/// The multiply-adds per word that `darcy moe lm ARGS` reports after one step on `corpus`.
double multiply_adds(const std::string& corpus, std::vector<std::string> args) {
  std::vector<std::string> all{"moe", "lm", "--corpus", corpus, "--dim", "16", "--batch", "4",
                               "--unroll", "5", "--sampled", "4", "--threads", "1",
                               "--max-steps", "1", "--experts", "16", "--quiet"};
  all.insert(all.end(), args.begin(), args.end());
  auto r = run_darcy(all);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto last = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  auto j = nlohmann::json::parse(last, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j.is_discarded() ? 0 : j.value("multiply_adds_per_word", 0.0);
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

} // namespace
} // namespace darcy::test
