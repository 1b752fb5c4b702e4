// The one line `darcy` prints for a failed command (apps/cli's fail): "darcy: error: COMMAND:
// ERROR", naming the command once even where the error from ops/ names its operation too.
#include <gtest/gtest.h>

#include "tests/integration/node_process.hpp"

namespace darcy::test {
namespace {

struct error_case {
  std::vector<std::string> args;
  const char* line;
};

/// Each case's command exits 1 with exactly its one line on stderr.
void expect_error_lines(const std::vector<error_case>& cases) {
  for (auto& c : cases) {
    auto r = run_darcy(c.args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err, c.line);
  }
}

TEST(cli_errors, a_failed_command_is_named_once_before_its_error) {
  expect_error_lines({
    // ops::moe_train's own message begins with "moe train: ".
    {{"moe", "train", "--checkpoint", "/tmp/darcy-cli-errors-moe", "--replicas", "0"},
     "darcy: error: moe train: invalid configuration: replicas, batch and steps must be at least 1\n"},
    // The reader's "not found: no file" wrapped with the package to install, once.
    {{"estimator", "fashion-mnist", "--data", "/nonexistent"},
     "darcy: error: estimator fashion-mnist: not found: no file "
     "/nonexistent/train-images-idx3-ubyte.gz (install the Debian package "
     "dataset-fashion-mnist: make deps)\n"},
    // An error that does not name the command gets it in front.
    {{"estimator", "brown-genre", "--corpus", "/nonexistent", "--quiet"},
     "darcy: error: estimator brown-genre: not found: /nonexistent/cats.txt (the Brown corpus: "
     "make demo fetches it)\n"},
  });
}

TEST(cli_errors, values_no_run_can_use_are_one_error_line_before_anything_starts) {
  expect_error_lines({
    // Each expert actor refused it and quit as it started: the run once crashed on that.
    {{"moe", "train", "--checkpoint", "/tmp/darcy-cli-errors-moe", "--learning-rate", "inf"},
     "darcy: error: moe train: invalid configuration: adam: learning_rate must be finite and "
     "positive\n"},
    {{"estimator", "fashion-mnist", "--task-type", "boss"},
     "darcy: error: estimator fashion-mnist: invalid configuration: --task-type: unknown task "
     "type 'boss' (chief, worker, ps or evaluator)\n"},
    {{"estimator", "brown-genre", "--task-type", "worker", "--cluster-spec", "{bad"},
     "darcy: error: estimator brown-genre: invalid configuration: --cluster-spec: not JSON\n"},
    // The sweep checks every row before it loads the corpus or trains the dense row.
    {{"moe", "experiment", "experts", "--corpus", "/nonexistent", "--expert-counts", "4,0",
      "--out", "/tmp/darcy-cli-errors-sweep"},
     "darcy: error: moe experiment experts: invalid configuration: moe: experts must be at least "
     "1\n"},
  });
}

} // namespace
} // namespace darcy::test
