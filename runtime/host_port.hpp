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

/// A port of 127.0.0.1 that the kernel just gave out and took back, or 0 when it gave none.
/// Another process may take it first: a caller that listens on it must try again on failure.
uint16_t free_loopback_port();

} // namespace darcy::runtime
