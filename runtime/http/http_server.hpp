// A small asynchronous HTTP/1.1 server on Boost.Beast, for the serving front end and for every
// node's /metrics and status page: keep-alive connections, a body limit, and a handler that may
// answer later from any thread. Malformed requests never reach the handler: the server answers
// them itself (400, 413, 431) with a JSON error and closes the connection.
//
//   auto server = http_server::start({.listen = {"127.0.0.1", 0}}, [](http_request req,
//                                     http_responder respond) { respond({200, "{}"}); });
//   std::cout << (*server)->port();
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

#include "runtime/host_port.hpp"

namespace darcy::runtime {

struct http_request {
  std::string method;
  std::string target;
  /// The Authorization, X-Darcy-App and X-Trace-Id headers; empty when absent.
  std::string authorization;
  std::string app;
  std::string trace_id;
  std::string body;
  /// The client's IP address as the socket sees it ("127.0.0.1", "::1"); empty when unknown.
  std::string peer;
};

/// Whether `address` (an IPv4 or IPv6 address, IPv4-mapped included) is a loopback address.
/// Anything that does not parse as an address, the empty string included, is not.
bool is_loopback_address(const std::string& address);

struct http_response {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
};

/// Answers one request; must be called exactly once, from any thread.
using http_responder = std::function<void(http_response)>;
using http_handler = std::function<void(http_request, http_responder)>;

/// The JSON error body every front-end error uses: {"error": {"code": ..., "message": ...}}.
std::string json_error(const std::string& code, const std::string& message);

struct http_server_options {
  runtime::host_port listen{"127.0.0.1", 0};
  size_t threads = 2;
  /// Larger bodies are refused with 413.
  size_t max_body_bytes = 1 << 20;
  /// Requests whose target `large_body` accepts may carry up to max_large_body_bytes instead
  /// (a sync's rows); the target is read before the body, so no other request is buffered
  /// past max_body_bytes.
  std::function<bool(std::string_view target)> large_body;
  size_t max_large_body_bytes = 0;
};

class http_server {
public:
  /// Listens and serves until stopped; errc::io_error when the address cannot be bound.
  static caf::expected<std::unique_ptr<http_server>> start(const http_server_options& options,
                                                           http_handler handler);

  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// The port listened on (the real one when options.listen.port was 0).
  uint16_t port() const;

  /// Closes every connection and joins the threads; requests still being handled are dropped.
  void stop();

private:
  struct impl;
  explicit http_server(std::shared_ptr<impl> p);
  std::shared_ptr<impl> impl_;
};

} // namespace darcy::runtime
