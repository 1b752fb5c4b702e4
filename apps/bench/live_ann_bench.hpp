// The live-table half of `darcy-bench sampling`: approximate top-k from the shards' ANN indexes
// (de_config::ann) on a table of clustered rows, against the exact scan (batch 1), while a
// stream updates a share of the rows a minute, and against FAISS (python3-faiss) built on the
// same rows, batch 1, as its users rebuild it for each refresh.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <caf/error.hpp>

namespace darcy::apps {

struct live_ann_options {
  uint64_t rows = 10'000'000;
  uint32_t dim = 64;
  uint32_t shards = 2;
  /// Queries timed and scored (batch 1); the exact scan answers each once.
  uint32_t queries = 100;
  /// The probes swept; the figure is the fastest setting at recall@10 >= 0.9.
  std::vector<uint32_t> probes{4, 8, 16, 32, 64, 128};
  uint32_t rerank = 100;
  /// The update stream: this share of the rows a minute, for this many seconds.
  double update_fraction_per_minute = 0.1;
  uint32_t update_seconds = 60;
  /// FAISS's families (apps/bench/peers/mips_faiss_ann.py), "none" for no peer.
  std::string faiss_families = "ivf-flat";
  std::string faiss_list_factors = "1";
  uint32_t faiss_build_budget_s = 1800;
  std::string python = "/usr/bin/python3";
  /// Where the FAISS peer's files go (removed after); `darcy-bench sampling` sets it, the
  /// dimension and the shards from its own options.
  std::string dir = "build/bench-sampling/live-ann";
};

/// Prints a table of points and appends the live_ann_* figures to `json` (",\"name\":value").
caf::error run_live_ann_bench(const live_ann_options& o, std::ostringstream& json);

} // namespace darcy::apps
