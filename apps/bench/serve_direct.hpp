// `darcy-bench serve-direct`: the peer of `apps/bench/serve.sh`. It answers the same batch-1
// user queries as the HTTP benchmark, by calling one export's shard indexes in this process
// (every shard searched, answers merged) on `threads` threads, with the serving search
// parameters. Last line: JSON with direct_qps, and direct_recall_at_k of the first 500 users
// against an exact search of the export's items.
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
  /// Graph exports: the search beam.
  uint32_t ef = 64;
  /// Seconds of queries measured.
  double seconds = 5;
  uint64_t seed = 7;
};

caf::error run_serve_direct(const serve_direct_options& opts);

} // namespace darcy::apps
