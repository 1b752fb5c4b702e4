// `darcy-bench serve-direct`: the peer of `apps/bench/serve.sh`. It answers the same batch-1
// user queries as the HTTP benchmark, by calling one export's shard indexes in this process
// (every shard searched, answers merged) on `threads` threads, with the serving search
// parameters. Last line: JSON with direct_qps.
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <string>

namespace darcy::apps {

struct serve_direct_options {
  /// EXPORTS/<name>: the newest version is used.
  std::string model_dir;
  uint32_t threads = 2;
  uint32_t k = 10;
  uint32_t probes = 8;
  uint32_t rerank = 30;
  /// Seconds of queries measured.
  double seconds = 5;
  uint64_t seed = 7;
};

caf::error run_serve_direct(const serve_direct_options& opts);

} // namespace darcy::apps
