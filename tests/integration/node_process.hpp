// Integration-test support: runs `darcy` (the real binary) as a child process, and starts
// `darcy node` processes on 127.0.0.1 with OS-chosen ports, reading back each node's address.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "runtime/host_port.hpp"
#include "runtime/process/process.hpp"

namespace darcy::test {

using node_process = runtime::launched_node;

/// Starts `darcy node --name NAME --listen 127.0.0.1:0 [--join SEED] EXTRA...` and waits until
/// it prints its address.
caf::expected<node_process> start_node(const std::string& name, const std::string& join = {},
                                       const std::vector<std::string>& extra = {});

struct cli_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs `argv` (a program's path, then its arguments) to completion and captures its output;
/// its stderr goes through a file, so that a chatty program never blocks on a full pipe. After
/// `timeout` the program gets SIGTERM (then SIGKILL) and exit_code is -1.
cli_result run_program(const std::vector<std::string>& argv,
                       std::chrono::seconds timeout = std::chrono::seconds(60));

/// Runs `darcy ARGS...` to completion and captures its output.
cli_result run_darcy(const std::vector<std::string>& args);

/// Runs `darcy-bench ARGS...` to completion (at most `timeout`) and captures its output.
cli_result run_bench(const std::vector<std::string>& args,
                     std::chrono::seconds timeout = std::chrono::seconds(120));

/// Writes `content` to a fresh file under the temp directory and returns its path.
std::string write_temp_file(const std::string& name, const std::string& content);

} // namespace darcy::test
