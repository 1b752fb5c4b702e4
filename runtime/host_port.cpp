#include "runtime/host_port.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <mutex>
#include <random>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "messages/error.hpp"

namespace darcy::runtime {

caf::expected<host_port> parse_host_port(std::string_view text) {
  auto fail = [&](const char* why) {
    return make_error(errc::invalid_argument,
                      "'" + std::string{text} + "' is not HOST:PORT (" + why + ")");
  };
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return fail("missing ':'");
  auto host = text.substr(0, colon);
  auto port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  else if (host.find(':') != std::string_view::npos)
    return fail("IPv6 hosts need brackets");
  if (host.empty())
    return fail("empty host");
  if (port_text.empty())
    return fail("empty port");
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port > 65535)
    return fail("port must be a number from 0 to 65535");
  return host_port{std::string{host}, static_cast<uint16_t>(port)};
}

std::string to_string(const host_port& x) {
  if (x.host.find(':') != std::string::npos)
    return "[" + x.host + "]:" + std::to_string(x.port);
  return x.host + ":" + std::to_string(x.port);
}

namespace {

/// Binds a socket to 127.0.0.1:`port` (0: the kernel picks) and answers the port bound, or 0.
uint16_t bind_loopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  socklen_t len = sizeof addr;
  uint16_t bound = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    bound = ntohs(addr.sin_port);
  ::close(fd);
  return bound;
}

/// The lowest port the kernel gives to a bind of port 0 (32768 when it cannot be read).
uint16_t ephemeral_low() {
  std::ifstream range{"/proc/sys/net/ipv4/ip_local_port_range"};
  unsigned low = 32768;
  range >> low;
  return static_cast<uint16_t>(std::clamp(low, 1025u, 65535u));
}

} // namespace

uint16_t free_loopback_port() {
  constexpr uint16_t lowest = 10000;
  auto below = ephemeral_low();
  if (below > lowest + 1000) {
    static std::mt19937 rng{std::random_device{}()};
    static std::mutex mutex;
    std::lock_guard<std::mutex> guard{mutex};
    std::uniform_int_distribution<int> pick{lowest, below - 1};
    for (int tries = 0; tries < 64; ++tries)
      if (auto port = bind_loopback(static_cast<uint16_t>(pick(rng))))
        return port;
  }
  return bind_loopback(0);
}

} // namespace darcy::runtime
