#include "runtime/host_port.hpp"

#include <fstream>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "messages/error.hpp"

namespace darcy::runtime {
namespace {

TEST(host_port, ParsesValidEndpointsAndRejectsInvalidOnes) {
  struct row {
    const char* text;
    bool ok;
    host_port expected;
  } rows[] = {
    {"127.0.0.1:7000", true, {"127.0.0.1", 7000}},
    {"localhost:0", true, {"localhost", 0}},
    {"[::1]:65535", true, {"::1", 65535}},
    {"host:65536", false, {}},
    {"host:", false, {}},
    {":80", false, {}},
    {"host", false, {}},
    {"host:80x", false, {}},
    {"::1:80", false, {}},
    {"", false, {}},
  };
  for (auto& r : rows) {
    auto parsed = parse_host_port(r.text);
    ASSERT_EQ(static_cast<bool>(parsed), r.ok) << r.text;
    if (r.ok)
      EXPECT_EQ(*parsed, r.expected) << r.text;
    else
      EXPECT_TRUE(is(error_of(parsed), errc::invalid_argument)) << r.text;
  }
}

TEST(host_port, PrintsBackWhatItParsed) {
  for (auto text : {"127.0.0.1:7000", "[::1]:80", "example.org:1"})
    EXPECT_EQ(to_string(*parse_host_port(text)), text);
}

// The free port lies below the kernel's ephemeral range (where a bind of port 0 never lands)
// when the range leaves room, and the caller can listen on it.
TEST(host_port, AFreeLoopbackPortIsBelowTheEphemeralRangeAndCanBeListenedOn) {
  std::ifstream range{"/proc/sys/net/ipv4/ip_local_port_range"};
  unsigned low = 0;
  range >> low;
  for (int i = 0; i < 8; ++i) {
    auto port = free_loopback_port();
    ASSERT_NE(port, 0);
    if (low > 11000) {
      EXPECT_GE(port, 10000);
      EXPECT_LT(port, low);
    }
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << port;
    EXPECT_EQ(::listen(fd, 1), 0) << port;
    ::close(fd);
  }
}

} // namespace
} // namespace darcy::runtime
