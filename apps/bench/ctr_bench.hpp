// `darcy bench ctr`: click-through prediction on generated Criteo-format data (Kaggle profile)
// with Darcy's DLRM and Wide & Deep on dynamic embeddings, against PyTorch's reference DLRM
// (a dictionary built in a first pass; a variant hashing each field into 1M rows) and a
// logistic regression on hashed crosses, on the same threads in the same run.
// Last line: {"bench":"ctr","metrics":{ctr_vs_torch, auc_gap_to_bayes, auc_vs_torch, ...}}.
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
  std::string python = "/usr/bin/python3";
};

caf::error run_ctr_bench(const ctr_bench_options& o);

} // namespace darcy::apps
