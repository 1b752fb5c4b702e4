// A network endpoint given on the command line or in a config file as "HOST:PORT"
// (IPv6 hosts in brackets: "[::1]:7000"). Port 0 asks the OS for a free port when listening.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

namespace darcy::runtime {

struct host_port {
  std::string host;
  uint16_t port = 0;

  friend bool operator==(const host_port&, const host_port&) = default;
};

/// Fails with errc::invalid_argument naming the offending text.
caf::expected<host_port> parse_host_port(std::string_view text);

std::string to_string(const host_port& x);

/// A port of 127.0.0.1 that was free just now, or 0 when none was found. It is picked below the
/// kernel's ephemeral range (ip_local_port_range), when that leaves room, so that no process
/// binding port 0 (a node, a client's socket) can be given it before the caller listens on it;
/// another caller of this function still may: a caller must try again on failure.
uint16_t free_loopback_port();

} // namespace darcy::runtime
