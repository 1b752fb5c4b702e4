// darcy_testing: a real redis-server on a free loopback port, for tests and benchmarks of the
// Redis store. It can be killed (SIGKILL), started again on the same port and directory (a
// restart, which keeps the rows only with append_only), and told to drop its clients.
//
//   auto redis = testing::redis_server::start({});
//   cfg.backend = backend_kind::redis;  cfg.path = (*redis)->url("test");
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "runtime/process/process.hpp"

namespace darcy::testing {

struct redis_server_options {
  /// Persist every write before answering (appendfsync always), so a restart keeps the rows.
  bool append_only = false;
  /// Where redis-server keeps its files; empty: a fresh temporary directory, removed at the end.
  std::string dir;
  /// The redis-server binary, looked up on PATH when it has no '/'.
  std::string binary = "redis-server";
};

class redis_server {
public:
  /// errc::not_found when redis-server is not installed (scripts/deps.sh installs it),
  /// errc::io_error when it does not start.
  static caf::expected<std::unique_ptr<redis_server>> start(redis_server_options opts);
  ~redis_server();

  uint16_t port() const { return port_; }
  /// redis://127.0.0.1:PORT/PREFIX
  std::string url(const std::string& prefix = "darcy") const;

  /// SIGKILLs the server and reaps it.
  void kill();
  /// Starts the server again on the same port and directory.
  caf::error restart();
  /// Closes every client connection but the one that asks (CLIENT KILL TYPE normal).
  caf::error drop_connections();

private:
  redis_server() = default;
  caf::error launch();

  redis_server_options opts_;
  std::string binary_;
  bool own_dir_ = false;
  uint16_t port_ = 0;
  std::optional<runtime::child_process> process_;
};

} // namespace darcy::testing
