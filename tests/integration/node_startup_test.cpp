// `darcy node` refuses bad start-up conditions with a non-zero exit and one line naming the
// problem: a seed that does not answer, a port in use, a malformed config, bad flags.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/integration/node_process.hpp"

namespace darcy::test {
namespace {

// A listening socket on 127.0.0.1 with an OS-chosen port, closed on destruction.
struct occupied_port {
  occupied_port() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd, 1);
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  ~occupied_port() { ::close(fd); }
  int fd = -1;
  uint16_t port = 0;
};

TEST(node_startup, BadConditionsExitNonZeroWithOneLineNamingTheProblem) {
  occupied_port busy;
  auto busy_address = "127.0.0.1:" + std::to_string(busy.port);
  auto bad_config = write_temp_file("bad.toml", "[node\nname = \"x\"\n");
  struct row {
    const char* name;
    std::vector<std::string> args;
    std::string expected;
  } rows[] = {
    {"wrong_join",
     {"--name", "x", "--listen", "127.0.0.1:0", "--join", "127.0.0.1:1"},
     "cannot join 127.0.0.1:1"},
    {"port_in_use", {"--name", "x", "--listen", busy_address}, "cannot listen on " + busy_address},
    {"malformed_config", {"--config", bad_config}, "invalid configuration: " + bad_config + ":1:"},
    {"missing_config", {"--config", "/nonexistent/x.toml"}, "/nonexistent/x.toml"},
    {"bad_listen", {"--name", "x", "--listen", "localhost"}, "--listen"},
    {"no_name", {"--listen", "127.0.0.1:0"}, "node name is empty"},
  };
  for (auto& r : rows) {
    std::vector<std::string> args{"node"};
    args.insert(args.end(), r.args.begin(), r.args.end());
    auto result = run_darcy(args);
    EXPECT_EQ(result.exit_code, 1) << r.name << ": " << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1)
      << r.name << ": " << result.err;
    EXPECT_NE(result.err.find(r.expected), std::string::npos) << r.name << ": " << result.err;
  }
}

} // namespace
} // namespace darcy::test

namespace darcy::test {
namespace {

/// `env VARS... darcy node FLAGS...`, waited for until it prints its address; returns the
/// process and that line.
std::pair<runtime::child_process, std::string> node_with_env(
  std::vector<std::string> vars, const std::vector<std::string>& flags = {}) {
  std::vector<std::string> argv{"/usr/bin/env"};
  argv.insert(argv.end(), vars.begin(), vars.end());
  argv.push_back(DARCY_BINARY);
  argv.push_back("node");
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto p = runtime::child_process::start(argv);
  EXPECT_TRUE(p) << render(p.error());
  auto line = p->wait_for_line("listening on", std::chrono::seconds(30));
  EXPECT_TRUE(line) << p->read_stderr();
  return {std::move(*p), line ? *line : std::string{}};
}

TEST(node_startup, SettingsComeFromTheEnvironmentAsContainerPlatformsPassThemAndFlagsWin) {
  // A seed on every interface, advertising the address members reach it at.
  auto [seed, seed_line] =
    node_with_env({"DARCY_NAME=env-seed", "DARCY_LISTEN=0.0.0.0:0", "DARCY_ADVERTISE=127.0.0.1"});
  ASSERT_NE(seed_line.find("darcy node env-seed listening on 127.0.0.1:"), std::string::npos)
    << seed_line;
  auto port = seed_line.substr(seed_line.rfind(':') + 1);
  // A member joining through a DNS name.
  auto [member, member_line] = node_with_env(
    {"DARCY_NAME=env-member", "DARCY_LISTEN=127.0.0.1:0", "DARCY_JOIN=localhost:" + port});
  EXPECT_NE(member_line.find("env-member"), std::string::npos) << member_line;
  // A flag beats its variable.
  auto [flagged, flagged_line] =
    node_with_env({"DARCY_NAME=from-env", "DARCY_JOIN=localhost:" + port},
                  {"--name", "from-flag", "--listen", "127.0.0.1:0"});
  EXPECT_NE(flagged_line.find("from-flag"), std::string::npos) << flagged_line;
  auto status = run_darcy({"cluster", "status", "--seed", "127.0.0.1:" + port});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  for (auto name : {"env-seed", "env-member", "from-flag"})
    EXPECT_NE(status.out.find(name), std::string::npos) << name << " in\n" << status.out;
  for (auto* p : {&flagged, &member, &seed})
    p->signal(SIGTERM);
  for (auto* p : {&flagged, &member, &seed})
    EXPECT_TRUE(p->wait(std::chrono::seconds(30)));

  auto everywhere = runtime::child_process::start(
    {"/usr/bin/env", "DARCY_NAME=x", "DARCY_LISTEN=0.0.0.0:0", DARCY_BINARY, "node"});
  ASSERT_TRUE(everywhere);
  auto code = everywhere->wait(std::chrono::seconds(30));
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 1);
  EXPECT_NE(everywhere->read_stderr().find("DARCY_ADVERTISE"), std::string::npos);
}

} // namespace
} // namespace darcy::test
