// `darcy-bench sampling`: the cost of one sampled_logits call (a batch of positives, a few
// hundred negatives drawn by the table's sampler) on tables of growing size, in memory and on
// the LevelDB tier behind a budget of a tenth of the rows. The call's cost should follow the
// samples, not the rows: sample_cost_10m_vs_10k is the largest table's time over the smallest's.
// Then approximate top-k over a live table (live_ann_bench.hpp). Last line: JSON.
#pragma once

#include <caf/error.hpp>

#include "apps/bench/live_ann_bench.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace darcy::apps {

struct sampling_bench_options {
  /// Table sizes, smallest first; the ratio is the last over the first.
  std::vector<uint64_t> rows{10'000, 1'000'000, 10'000'000};
  uint32_t dim = 64;
  uint32_t batch = 64;
  uint32_t num_sampled = 256;
  /// Timed calls per table; the figure is their median.
  uint32_t calls = 200;
  /// The LevelDB tier's cache, as a fraction of the rows.
  double cache_fraction = 0.1;
  /// Which tiers run, comma-separated: memory, leveldb ("none": neither).
  std::string tiers = "memory,leveldb";
  /// Where the LevelDB tables live (removed before and after).
  std::string dir = "build/bench-sampling";
  uint32_t shards = 2;
  /// The live-table ANN figures (live_ann_bench.hpp); live_ann.rows 0 leaves them out.
  live_ann_options live_ann;
};

caf::error run_sampling_bench(const sampling_bench_options& opts);

} // namespace darcy::apps
