// `darcy node` refuses bad start-up conditions with a non-zero exit and one line naming the
// problem: a seed that does not answer, a port in use, a malformed config, bad flags.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

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
    {"wrong_join", {"--name", "x", "--listen", "127.0.0.1:0", "--join", "127.0.0.1:1"},
     "cannot join 127.0.0.1:1"},
    {"port_in_use", {"--name", "x", "--listen", busy_address},
     "cannot listen on " + busy_address},
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
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << r.name << ": "
                                                                          << result.err;
    EXPECT_NE(result.err.find(r.expected), std::string::npos) << r.name << ": " << result.err;
  }
}

} // namespace
} // namespace darcy::test
