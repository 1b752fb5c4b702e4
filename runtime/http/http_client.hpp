// A minimal blocking HTTP/1.1 client for loopback: the soak's load on `darcy serve`, and tests
// of the HTTP front ends. It sends the bytes exactly as given (malformed ones included),
// half-closes, and reads the answer until the server closes.
#pragma once

#include <cstdint>
#include <string>

namespace darcy::runtime {

/// Sends `raw` to 127.0.0.1:port, half-closes, and returns everything the server answered
/// before closing (empty when it could not connect). Waits at most 20 s per read.
std::string http_exchange(uint16_t port, const std::string& raw);

/// The status code of an answer; 0 when there is none.
unsigned http_status(const std::string& answer);

/// The body of an answer (after the blank line).
std::string http_body(const std::string& answer);

/// A well-formed request with Connection: close; a bearer token when `token` is not empty.
std::string http_request_text(const std::string& method, const std::string& target,
                              const std::string& token, const std::string& body = {});

} // namespace darcy::runtime
