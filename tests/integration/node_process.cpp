#include "tests/integration/node_process.hpp"

#include <unistd.h>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "messages/error.hpp"

namespace darcy::test {

caf::expected<node_process> start_node(const std::string& name, const std::string& join,
                                       const std::vector<std::string>& extra) {
  std::vector<std::string> args{DARCY_BINARY, "node", "--name", name, "--listen", "127.0.0.1:0"};
  if (!join.empty()) {
    args.push_back("--join");
    args.push_back(join);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return runtime::launch_node(args, std::chrono::seconds(30));
}

cli_result run_program(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  static std::atomic<uint64_t> runs{0};
  auto err_file = (std::filesystem::temp_directory_path() /
                   ("darcy_it_" + std::to_string(::getpid()) + "_stderr_" + std::to_string(++runs)))
                    .string();
  // sh's $0 is the file, "$@" the program and its arguments.
  std::vector<std::string> sh{"/bin/sh", "-c", "exec \"$@\" 2>\"$0\"", err_file};
  sh.insert(sh.end(), argv.begin(), argv.end());
  cli_result result;
  auto child = runtime::child_process::start(sh);
  if (!child) {
    result.err = render(child.error());
    return result;
  }
  // Drain stdout until EOF (a line that never comes), then reap.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto rest = child->wait_for_line("\x01", timeout);
  (void)rest;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
    deadline - std::chrono::steady_clock::now());
  auto code = child->wait(std::max(left, std::chrono::milliseconds{1000}));
  if (!code) {
    // SIGTERM first, so that a script's exit trap stops what it started.
    child->signal(SIGTERM);
    child->wait(std::chrono::seconds(10));
  }
  result.exit_code = code ? *code : -1;
  std::ifstream err{err_file};
  result.err.assign(std::istreambuf_iterator<char>{err}, {});
  std::filesystem::remove(err_file);
  result.out = child->stdout_seen();
  return result;
}

cli_result run_darcy(const std::vector<std::string>& args) {
  std::vector<std::string> argv{DARCY_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, std::chrono::seconds(120));
}

cli_result run_bench(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  std::vector<std::string> argv{DARCY_BENCH_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, timeout);
}

std::string write_temp_file(const std::string& name, const std::string& content) {
  auto path = std::filesystem::temp_directory_path() /
              ("darcy_it_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream{path} << content;
  return path.string();
}

} // namespace darcy::test
