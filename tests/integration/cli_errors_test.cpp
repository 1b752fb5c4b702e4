// The one line `darcy` prints for a failed command (apps/cli's fail): "darcy: error: COMMAND:
// ERROR", naming the command once even where the error from ops/ names its operation too.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/integration/node_process.hpp"

namespace darcy::test {
namespace {

struct error_case {
  std::vector<std::string> args;
  std::string line;
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
     "darcy: error: moe train: invalid configuration: replicas, batch and steps must be at least "
     "1\n"},
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
    // Replicas are copies of shards on a cluster: refused before any export is read.
    {{"serve", "--exports", "/nonexistent", "--replicas", "2"},
     "darcy: error: invalid configuration: replicas are copies of the embedding shards: give "
     "--embedding-shards\n"},
    // Each expert actor refused it and quit as it started: the run once crashed on that.
    {{"moe", "train", "--checkpoint", "/tmp/darcy-cli-errors-moe", "--learning-rate", "inf"},
     "darcy: error: moe train: invalid configuration: optimizer: learning_rate must be a positive "
     "number\n"},
    {{"estimator", "fashion-mnist", "--task-type", "boss"},
     "darcy: error: estimator fashion-mnist: invalid configuration: --task-type: unknown task "
     "type 'boss' (chief, worker, ps or evaluator)\n"},
    {{"estimator", "brown-genre", "--task-type", "worker", "--cluster-spec", "{bad"},
     "darcy: error: estimator brown-genre: invalid configuration: --cluster-spec: not JSON\n"},
    // A host role runs what the chief sends it, but refuses a bad option of its own at once
    // instead of waiting for a chief.
    {{"estimator", "brown-genre", "--learning-rate", "nan", "--task-type", "ps", "--task-index",
      "0", "--cluster-spec",
      R"({"chief":["127.0.0.1:1"],"ps":["127.0.0.1:2"],"worker":["127.0.0.1:3"]})"},
     "darcy: error: estimator brown-genre (ps-0): invalid configuration: brown-genre job options: "
     "optimizer: learning_rate must be a positive number\n"},
    {{"estimator", "fashion-mnist", "--learning-rate", "-1", "--task-type", "worker",
      "--task-index", "0", "--cluster-spec",
      R"({"chief":["127.0.0.1:1"],"ps":["127.0.0.1:2"],"worker":["127.0.0.1:3"]})"},
     "darcy: error: estimator fashion-mnist (worker-0): invalid configuration: fashion-mnist job "
     "options: optimizer: learning_rate must be a positive number\n"},
    // The sweep checks every row before it loads the corpus or trains the dense row.
    {{"moe", "experiment", "experts", "--corpus", "/nonexistent", "--expert-counts", "4,0", "--out",
      "/tmp/darcy-cli-errors-sweep"},
     "darcy: error: moe experiment experts: invalid configuration: moe: experts must be at least "
     "1\n"},
  });
}

TEST(cli_errors, a_flag_the_run_would_ignore_is_one_error_line) {
  auto spec = R"({"chief":["127.0.0.1:1"],"ps":["127.0.0.1:2"],"worker":["127.0.0.1:3"]})";
  expect_error_lines({
    // A local run used to train its epochs and ignore these.
    {{"estimator", "fashion-mnist", "--max-steps", "100", "--data", "/nonexistent"},
     "darcy: error: estimator fashion-mnist: invalid configuration: --max-steps applies to a "
     "distributed role only (give --task-type or DARCY_CONFIG); a local run trains for "
     "--epochs\n"},
    {{"estimator", "fashion-mnist", "--train-examples", "256", "--data", "/nonexistent"},
     "darcy: error: estimator fashion-mnist: invalid configuration: --train-examples applies to "
     "a "
     "distributed role only (give --task-type or DARCY_CONFIG)\n"},
    {{"estimator", "brown-genre", "--corpus", "/nonexistent", "--export-dir", "/tmp/darcy-x"},
     "darcy: error: estimator brown-genre: invalid configuration: --export-dir applies to a "
     "distributed role only (give --task-type or DARCY_CONFIG)\n"},
    {{"estimator", "brown-genre", "--corpus", "/nonexistent", "--cluster-spec", spec},
     "darcy: error: estimator brown-genre: invalid configuration: --cluster-spec applies to a "
     "distributed role only (give --task-type or DARCY_CONFIG)\n"},
    // A role used to train to --max-steps and ignore --epochs.
    {{"estimator", "brown-genre", "--epochs", "3", "--task-type", "worker", "--cluster-spec", spec},
     "darcy: error: estimator brown-genre: invalid configuration: --epochs applies to a local "
     "run "
     "only; a distributed role trains to --max-steps\n"},
    // A flat MoE has no groups.
    {{"moe", "lm", "--corpus", "/nonexistent", "--groups", "16"},
     "darcy: error: moe lm: invalid configuration: --groups applies to --middle hierarchical "
     "only\n"},
  });
  // With DARCY_CONFIG naming the role, --cluster-spec and --task-index were ignored.
  ASSERT_EQ(
    ::setenv(
      "DARCY_CONFIG",
      R"({"cluster":{"chief":["127.0.0.1:1"],"ps":["127.0.0.1:2"],"worker":["127.0.0.1:3"]},)"
      R"("task":{"type":"worker","index":0}})",
      1),
    0);
  expect_error_lines({
    {{"estimator", "fashion-mnist", "--task-index", "1"},
     "darcy: error: estimator fashion-mnist: invalid configuration: --task-index goes with "
     "--task-type; here DARCY_CONFIG names the role\n"},
    {{"estimator", "fashion-mnist", "--epochs", "2"},
     "darcy: error: estimator fashion-mnist: invalid configuration: --epochs applies to a local "
     "run only; a distributed role trains to --max-steps\n"},
  });
  ::unsetenv("DARCY_CONFIG");
}

TEST(cli_errors, a_flag_a_ctr_stream_run_would_ignore_is_one_error_line) {
  auto stream = [](std::vector<std::string> more) {
    std::vector<std::string> args{"estimator", "ctr", "--stream", "generate", "--windows", "1"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  auto says = [](const std::string& what) {
    return "darcy: error: estimator ctr: invalid configuration: " + what + "\n";
  };
  expect_error_lines({
    // Each of these used to train locally and say nothing.
    {stream({"--task-type", "worker", "--max-steps", "5"}),
     says("--windows applies to a stream trained in this process; a distributed stream trains "
          "to --max-steps")},
    {stream({"--max-steps", "5"}),
     says("--max-steps applies to a distributed role only (give --task-type or DARCY_CONFIG); "
          "a local run trains for --windows")},
    {{"estimator", "ctr", "--stream", "generate", "--task-type", "worker", "--window", "100"},
     says("--window applies to a stream trained in this process; a distributed stream trains "
          "to --max-steps")},
    {{"estimator", "ctr", "--stream", "-", "--task-type", "worker"},
     says("a distributed stream reads 'generate' or a file, not standard input")},
    {stream({"--eval", "/nonexistent.tsv"}),
     says("--eval applies to a run on --train files, not to a --stream run")},
    {stream({"--epochs", "3"}), says("--epochs applies to a run on --train files, not to a "
                                     "--stream run")},
    {stream({"--train-rows", "10"}),
     says("--train-rows applies to a run on --train files, not to a --stream run")},
    {stream({"--model-dir", "/tmp/darcy-x"}),
     says("--model-dir applies to a run on --train files, not to a --stream run")},
    {{"estimator", "ctr", "--stream", "-", "--max-ids", "100"},
     says("--max-ids applies to --stream generate only, not to '-'")},
    {stream({"--sync-every", "1"}), says("--sync-every goes with --sync-dir")},
    {stream({"--sync-to", "http://127.0.0.1:1/v1/models/m"}),
     says("--sync-to goes with --sync-dir")},
    {stream({"--sync-dir", "/tmp/darcy-x", "--sync-token-file", "/nonexistent"}),
     says("--sync-token-file goes with --sync-to")},
    {stream({"--sync-dir", "/tmp/darcy-x", "--sync-send", "folder"}),
     says("--sync-send goes with --sync-to")},
    // And the stream's own flags in a run on files.
    {{"estimator", "ctr", "--train", "/nonexistent.tsv", "--window", "100"},
     says("--window applies to a --stream run only")},
    {{"estimator", "ctr", "--train", "/nonexistent.tsv", "--sync-dir", "/tmp/darcy-x"},
     says("--sync-dir applies to a --stream run only")},
  });
  ASSERT_EQ(::setenv("DARCY_CONFIG", R"({"task":{"type":"worker","index":0}})", 1), 0);
  expect_error_lines({
    {stream({}), says("--windows applies to a stream trained in this process; a distributed "
                      "stream trains to --max-steps")},
  });
  ::unsetenv("DARCY_CONFIG");
}

} // namespace
} // namespace darcy::test
