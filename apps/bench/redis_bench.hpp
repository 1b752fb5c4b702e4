// `darcy-bench redis`: batched lookups of rows from the Redis store against redis-benchmark's
// pipelined GETs of values of the same size, on one redis-server this benchmark starts; and the
// store's local cache on a Zipf stream. Its last line is one JSON object.
#pragma once

#include <caf/error.hpp>

#include <cstdint>

namespace darcy::apps {

struct redis_bench_options {
  uint64_t rows = 100000;
  uint32_t dim = 64;
  /// Keys per lookup: one MGET round trip. A training step or a ranking request looks up
  /// hundreds of sparse keys at once.
  uint32_t batch = 256;
  uint32_t batches = 1250;
  uint32_t repetitions = 3;
  /// Requests of the redis-benchmark peer.
  uint64_t peer_requests = 1000000;
  /// The cached reader: Zipf exponent of its stream, cache size as a fraction of the rows,
  /// staleness bound.
  double zipf = 1.0;
  double cache_fraction = 0.1;
  uint32_t staleness_ms = 10000;
};

caf::error run_redis_bench(const redis_bench_options& opts);

} // namespace darcy::apps
