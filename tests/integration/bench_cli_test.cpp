// `darcy-bench` as a user runs it: options that cannot make a benchmark are refused with one
// line naming the option, before any timing starts: exit code 2 for what the command line's
// parser refuses, 1 for what the benchmark does.
#include <gtest/gtest.h>

#include "tests/integration/node_process.hpp"

namespace darcy::test {
namespace {

TEST(bench_cli, options_that_cannot_make_a_benchmark_are_one_clear_error_line) {
  struct bad_case {
    const char* what;
    std::vector<std::string> args;
    const char* mentions;
    int exit_code = 1;
  };
  const std::string ascending = "--scaling-workers must be ascending worker counts from 1";
  std::vector<bad_case> cases{
    {"worker counts out of order", {"--scaling-workers", "2,1"}, ascending.c_str()},
    {"a worker count twice", {"--scaling-workers", "1,2,2"}, ascending.c_str()},
    {"no one-worker base", {"--scaling-workers", "2,4"}, ascending.c_str()},
    {"zero workers", {"--scaling-workers", "0,1"}, "--scaling-workers: Value 0 not in range", 2},
    {"zero ps tasks", {"--scaling-ps", "0"}, "--scaling-ps: Value 0 not in range", 2},
    {"no Brown corpus for the scaling runs",
     {"--corpus", "/nonexistent"},
     "not found: --corpus: /nonexistent/cats.txt (the Brown corpus: make demo fetches it)"},
    {"no Fashion-MNIST",
     {"--data", "/nonexistent", "--scaling-steps", "0"},
     "not found: no file /nonexistent/train-images-idx3-ubyte.gz (install the Debian package"},
  };
  for (auto& c : cases) {
    std::vector<std::string> args{"estimator", "--no-peer"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = run_bench(args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(c.mentions), std::string::npos) << c.what << ": " << r.err;
    EXPECT_EQ(r.err.find("not found: not found"), std::string::npos) << c.what << ": " << r.err;
    EXPECT_EQ(r.out.find("{\"bench\""), std::string::npos) << c.what << ": " << r.out;
  }
  auto r = run_bench({"moe", "--no-peer", "--settings", "seed,foo"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("unknown setting 'foo' (seed, ffn)"), std::string::npos) << r.err;
}

} // namespace
} // namespace darcy::test
