// Child processes for fault-tolerance drills, benchmarks and integration tests: start a
// program with its stdout and stderr captured, wait for a line on stdout, signal it (SIGKILL
// included), and reap it. The destructor SIGKILLs a child that is still running.
#pragma once

#include <sys/types.h>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "runtime/host_port.hpp"

namespace darcy::runtime {

class child_process {
public:
  /// Starts `argv[0]` (a path) with `argv`; fails with errc::io_error.
  static caf::expected<child_process> start(const std::vector<std::string>& argv);

  child_process(child_process&& other) noexcept;
  child_process& operator=(child_process&& other) noexcept;
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  ~child_process();

  pid_t pid() const { return pid_; }

  /// Reads stdout until a line containing `needle` arrives and returns that line. Fails with
  /// errc::timeout after `timeout`, or errc::io_error when the child closes stdout first.
  caf::expected<std::string> wait_for_line(const std::string& needle,
                                           std::chrono::milliseconds timeout);

  void signal(int sig) const;

  /// Waits for the child to exit and returns its exit code (128 + N when killed by signal N);
  /// errc::timeout when it is still running after `timeout`.
  caf::expected<int> wait(std::chrono::milliseconds timeout);

  /// Everything the child wrote to stderr so far (drained without blocking).
  std::string read_stderr();

  /// Everything read from the child's stdout so far, consumed lines included.
  const std::string& stdout_seen() const { return out_transcript_; }

private:
  child_process() = default;
  void close_fds();

  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  std::string out_buffer_;
  std::string out_transcript_;
  std::string err_buffer_;
  std::optional<int> status_;
};

/// Starts `argv` in a session of its own, so that it outlives this process and no terminal
/// signal reaches it; its stdout and stderr are appended to `log`. Returns its pid, or
/// errc::io_error when it cannot start. The caller may reap it with waitpid while it lives.
caf::expected<pid_t> start_detached(const std::vector<std::string>& argv, const std::string& log);

/// The path of the running executable.
std::string self_executable();

/// The executable `name` in the folder of the running one (darcy-bench runs the `darcy` built
/// beside it); empty when the running executable's path cannot be read.
std::string sibling_executable(const std::string& name);

/// A `darcy node` process and the address it listens on.
struct launched_node {
  child_process process;
  host_port address;
};

/// Runs `argv` (a `darcy node` command line) and waits until the node prints
/// "... listening on HOST:PORT"; fails with the node's stderr when it exits or stays silent.
caf::expected<launched_node> launch_node(const std::vector<std::string>& argv,
                                         std::chrono::milliseconds timeout);

} // namespace darcy::runtime
