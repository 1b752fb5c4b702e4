// A minimal blocking HTTP/1.1 client: the soak's load on `darcy serve`, tests of the HTTP front
// ends, and a stream run's sync pushes. It sends the bytes exactly as given (malformed ones
// included), half-closes, and reads the answer until the server closes.
#pragma once

#include <cstdint>
#include <string>

#include <caf/expected.hpp>

#include "runtime/host_port.hpp"

namespace darcy::runtime {

/// Sends `raw` to 127.0.0.1:port, half-closes, and returns everything the server answered
/// before closing (empty when it could not connect). Waits at most 20 s per read.
std::string http_exchange(uint16_t port, const std::string& raw);

/// The same to `to` (a host name or address, resolved).
std::string http_exchange(const host_port& to, const std::string& raw);

/// The status code of an answer; 0 when there is none.
unsigned http_status(const std::string& answer);

/// The body of an answer (after the blank line).
std::string http_body(const std::string& answer);

/// A well-formed request with Connection: close; a bearer token when `token` is not empty.
std::string http_request_text(const std::string& method, const std::string& target,
                              const std::string& token, const std::string& body = {},
                              const std::string& content_type = "application/json");

/// Where an "http://HOST:PORT/PATH" URL points: "http://127.0.0.1:8500/v1/models/ctr" is
/// {127.0.0.1:8500, "/v1/models/ctr"}.
struct http_url {
  host_port address;
  std::string target;
};

/// The parts of `url`; errc::invalid_argument for anything but http://HOST:PORT/PATH (no
/// https, no user, a port and a path required).
caf::expected<http_url> parse_http_url(const std::string& url);

} // namespace darcy::runtime
