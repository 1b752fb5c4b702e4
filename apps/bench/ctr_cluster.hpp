// The distributed part of `darcy-bench ctr`: the same DLRM trained as the roles of a job whose
// processes run on 127.0.0.1 (a chief, parameter servers whose nodes also hold the embedding
// shards, workers and an evaluator), for its examples/s and test AUC.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

namespace darcy::apps {

struct ctr_cluster_options {
  std::string train;
  std::string test;
  /// Where the job's checkpoints go (emptied first).
  std::string dir;
  /// Parameter servers: node processes that hold the dense variables and the tables' shards.
  size_t ps = 2;
  size_t workers = 1;
  /// Global steps of `batch` examples each.
  uint64_t steps = 3000;
  size_t batch = 128;
  /// Test rows each evaluation reads (the first ones of `test`).
  uint64_t eval_examples = 100'000;
  uint32_t embedding_dim = 16;
  std::vector<uint32_t> bottom_units;
  std::vector<uint32_t> top_units;
  uint64_t seed = 1;
};

struct ctr_cluster_result {
  /// Global steps times the batch, over the seconds the chief saw them take.
  double examples_per_s = 0;
  /// The evaluator's AUC on the last checkpoint.
  double auc = 0;
  uint64_t global_step = 0;
};

/// Runs the job with processes of this executable (`darcy estimator ctr` roles) and waits for
/// its end; fails with the stderr of the role that failed, or errc::timeout.
caf::expected<ctr_cluster_result> run_ctr_cluster(const ctr_cluster_options& o);

} // namespace darcy::apps
