// `darcy-bench embedding`: lookup and update throughput of the dictionary-free embedding paths
// (store, in-process service, service with remote shards, LevelDB cold and warm) against the
// dictionary baseline, a dense float[keys][dim] gathered by integer id. Last line: JSON.
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <string>

namespace darcy::apps {

struct embedding_bench_options {
  uint64_t keys = 10'000'000;
  uint32_t dim = 64;
  uint32_t batch = 4096;
  uint32_t batches = 200;
  double zipf = 1.1;
  uint32_t shards = 4;
  uint64_t leveldb_keys = 1'000'000;
  /// Passes over the stream per figure; the figure is their median.
  uint32_t repetitions = 3;
  /// Which paths run, comma-separated: store, service, direct, remote, leveldb, rules (dense
  /// always runs).
  std::string paths = "store,service,direct,remote,leveldb,rules";
  /// The rule plugin of rule_update_vs_builtin; empty: libdarcy_rule_bench_adagrad.so beside
  /// darcy-bench.
  std::string rule_plugin;
};

caf::error run_embedding_bench(const embedding_bench_options& opts);

} // namespace darcy::apps
