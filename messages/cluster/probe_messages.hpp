// Messaging-probe messages: a node runs `count` echo round trips of `payload_bytes` against a
// target with at most `window` requests in flight, and reports latencies. Used by
// `darcy-bench messaging` to measure node-to-node messaging between two real processes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace darcy {

struct probe_spec {
  /// Target node's listen address; its agent answers echo_atom.
  std::string host;
  uint16_t port = 0;
  uint32_t count = 1000;
  uint32_t payload_bytes = 1024;
  uint32_t window = 1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, probe_spec& x) {
  return f(caf::meta::type_name("probe_spec"), x.host, x.port, x.count, x.payload_bytes, x.window);
}

struct probe_result {
  uint32_t count = 0;
  uint32_t payload_bytes = 0;
  uint32_t window = 0;
  double seconds = 0;
  /// Per-request round-trip latencies in nanoseconds, in completion order.
  std::vector<int64_t> latencies_ns;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, probe_result& x) {
  return f(caf::meta::type_name("probe_result"), x.count, x.payload_bytes, x.window, x.seconds,
           x.latencies_ns);
}

} // namespace darcy
