// `darcy-bench ctr`: click-through prediction on generated Criteo-format data (Kaggle profile)
// with Darcy's DLRM and Wide & Deep on dynamic embeddings, against PyTorch's reference DLRM
// (a dictionary built in a first pass; a variant hashing each field into 1M rows) and a
// logistic regression on hashed crosses, on the same threads in the same run.
// With --colossal, DLRM on a Terabyte-profile stream with fresh ids whose tables live in LevelDB
// behind memory tiers of a byte budget, against the same model on a stream that fits in memory.
// The same DLRM also runs as the roles of a job on local node processes (apps/bench/ctr_cluster).
// Last line: {"bench":"ctr","metrics":{ctr_vs_torch, auc_gap_to_bayes, auc_vs_torch,
// colossal_keys, colossal_stored_vs_budget, colossal_peak_rss_gib, colossal_vs_memory,
// colossal_lowest_minute_vs_memory, ...}}.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>

namespace darcy::apps {

struct ctr_bench_options {
  uint64_t rows = 4'000'000;
  uint64_t test_rows = 500'000;
  /// Generated files are kept here and reused by a run of the same rows and seed.
  std::string dir = "build/ctr-bench";
  /// Caps every field's ids (0: Kaggle's cardinalities), for smoke runs.
  uint64_t max_ids = 0;
  uint32_t epochs = 1;
  size_t batch = 128;
  uint32_t embedding_dim = 16;
  std::vector<uint32_t> bottom_units = {512, 256, 64, 16};
  std::vector<uint32_t> top_units = {512, 256};
  size_t threads = 2;
  uint64_t seed = 1;
  bool peer = true;
  /// The Kaggle-profile part: the models' quality and speed against the peers.
  bool quality = true;
  /// With quality: DLRM once more with this update rule on its tables at the same learning rate
  /// (rule_auc_vs_adagrad, rule_bytes_per_row against dlrm_bytes_per_row); empty: not run.
  std::string compare_rule = "rowwise_adagrad";
  /// The same DLRM as a distributed job on 127.0.0.1: 2 parameter servers whose node processes
  /// hold the tables' shards, 1 worker and an evaluator, for `cluster_steps` global steps.
  bool cluster = true;
  uint64_t cluster_steps = 5000;
  /// The colossal part: `colossal_rows` Terabyte-profile rows with a share `fresh_rate` of new
  /// ids (the defaults give about 120M keys, ten times what 4 GiB of memory tiers hold), the tables
  /// in LevelDB under dir behind memory tiers of `memory_budget` bytes (each run in a child `darcy
  /// estimator ctr`, so that its peak RSS is its own), then the same model on the stream's first
  /// `memory_rows` rows in memory.
  bool colossal = false;
  uint64_t colossal_rows = 10'500'000;
  uint64_t colossal_test_rows = 100'000;
  double fresh_rate = 0.45;
  uint64_t memory_budget = uint64_t{4} << 30;
  uint64_t memory_rows = 1'000'000;
  /// Shards of every table in both colossal runs; each shard of the tiered run is a LevelDB
  /// database. 8 rather than the estimator's 2: smaller databases have fewer levels, so
  /// compaction rewrites each row fewer times (a third of the bytes written at 1.2M rows).
  uint32_t colossal_shards = 8;
  /// The colossal run's look-ahead (`darcy estimator ctr --prefetch-batches`).
  uint32_t prefetch_batches = 0;
  std::string python = "/usr/bin/python3";
};

caf::error run_ctr_bench(const ctr_bench_options& o);

} // namespace darcy::apps
