#include "ops/testing/redis_server.hpp"

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "messages/error.hpp"
#include "runtime/host_port.hpp"
#include "stores/embedding/redis_client.hpp"

namespace darcy::testing {

namespace {

std::string find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos)
    return std::filesystem::exists(name) ? name : std::string{};
  const char* path = std::getenv("PATH");
  std::istringstream dirs{path ? path : "/usr/bin:/bin"};
  for (std::string dir; std::getline(dirs, dir, ':');) {
    auto candidate = std::filesystem::path{dir} / name;
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
  }
  return {};
}

} // namespace

caf::expected<std::unique_ptr<redis_server>> redis_server::start(redis_server_options opts) {
  std::unique_ptr<redis_server> server{new redis_server};
  server->binary_ = find_on_path(opts.binary);
  if (server->binary_.empty())
    return make_error(errc::not_found, opts.binary +
                                         " is not installed (scripts/deps.sh "
                                         "installs redis-server)");
  if (opts.dir.empty()) {
    char pattern[] = "/tmp/darcy_redis_XXXXXX";
    if (::mkdtemp(pattern) == nullptr)
      return make_error(errc::io_error, "cannot make a directory for redis-server");
    opts.dir = pattern;
    server->own_dir_ = true;
  }
  server->opts_ = std::move(opts);
  if (auto err = server->launch())
    return err;
  return server;
}

redis_server::~redis_server() {
  kill();
  if (own_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(opts_.dir, ec);
  }
}

std::string redis_server::url(const std::string& prefix) const {
  return "redis://127.0.0.1:" + std::to_string(port_) + "/" + prefix;
}

caf::error redis_server::launch() {
  caf::error last;
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto port = port_ != 0 ? port_ : runtime::free_loopback_port();
    std::vector<std::string> argv{binary_,
                                  "--port",
                                  std::to_string(port),
                                  "--bind",
                                  "127.0.0.1",
                                  "--dir",
                                  opts_.dir,
                                  "--save",
                                  "",
                                  "--appendonly",
                                  opts_.append_only ? "yes" : "no",
                                  "--appendfsync",
                                  "always",
                                  "--protected-mode",
                                  "no",
                                  "--daemonize",
                                  "no",
                                  "--logfile",
                                  ""};
    auto child = runtime::child_process::start(argv);
    if (!child)
      return std::move(child.error());
    auto ready = child->wait_for_line("Ready to accept connections", std::chrono::seconds(20));
    if (ready) {
      port_ = port;
      process_.emplace(std::move(*child));
      return {};
    }
    last = make_error(errc::io_error, "redis-server on port " + std::to_string(port) +
                                        " did not start: " + child->stdout_seen() +
                                        child->read_stderr());
    if (port_ != 0)
      break; // a restart keeps its port
  }
  return last;
}

void redis_server::kill() {
  if (!process_)
    return;
  process_->signal(SIGKILL);
  process_->wait(std::chrono::seconds(10));
  process_.reset();
}

caf::error redis_server::restart() {
  kill();
  return launch();
}

caf::error redis_server::drop_connections() {
  stores::redis_location where{"127.0.0.1", port_};
  auto client = stores::redis_client::connect(where, std::chrono::seconds(5));
  if (!client)
    return std::move(client.error());
  auto reply = (*client)->call({"CLIENT", "KILL", "TYPE", "normal"});
  return reply ? caf::error{} : std::move(reply.error());
}

} // namespace darcy::testing
