// `darcy-bench messaging`: request/response round trips per second and latency percentiles
// for 1 KiB and 256 KiB payloads, inside one process, between two `darcy node` processes on
// loopback, and over a plain Boost.Asio TCP echo. Its last line is one JSON object.
#pragma once

#include <caf/error.hpp>

#include <cstdint>

namespace darcy::apps {

struct messaging_bench_options {
  uint32_t count_1k = 20000;
  uint32_t count_256k = 1000;
  uint32_t latency_count = 5000;
  uint32_t window = 16;
  uint32_t repetitions = 3;
};

caf::error run_messaging_bench(const messaging_bench_options& opts);

} // namespace darcy::apps
