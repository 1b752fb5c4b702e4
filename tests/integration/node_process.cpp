#include "tests/integration/node_process.hpp"

#include <filesystem>
#include <fstream>
#include <unistd.h>

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

cli_result run_darcy(const std::vector<std::string>& args) {
  std::vector<std::string> argv{DARCY_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  cli_result result;
  auto child = runtime::child_process::start(argv);
  if (!child) {
    result.err = render(child.error());
    return result;
  }
  // Drain stdout until EOF (a line that never comes), then reap.
  auto rest = child->wait_for_line("\x01", std::chrono::seconds(60));
  (void) rest;
  auto code = child->wait(std::chrono::seconds(60));
  result.exit_code = code ? *code : -1;
  result.err = child->read_stderr();
  result.out = child->stdout_seen();
  return result;
}

std::string write_temp_file(const std::string& name, const std::string& content) {
  auto path = std::filesystem::temp_directory_path() /
              ("darcy_it_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream{path} << content;
  return path.string();
}

} // namespace darcy::test
