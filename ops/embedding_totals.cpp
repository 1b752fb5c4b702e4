#include "ops/embedding_totals.hpp"

#include "ops/embedding_ops.hpp"

namespace darcy::ops {

namespace {

constexpr uint64_t embedding_stats::*summed_counters[] = {&embedding_stats::rows,
                                                          &embedding_stats::bytes,
                                                          &embedding_stats::raw_bytes,
                                                          &embedding_stats::cached_rows,
                                                          &embedding_stats::cache_capacity,
                                                          &embedding_stats::tier_hits,
                                                          &embedding_stats::tier_misses,
                                                          &embedding_stats::disk_reads,
                                                          &embedding_stats::prefetched_rows,
                                                          &embedding_stats::disk_bytes,
                                                          &embedding_stats::evictions,
                                                          &embedding_stats::dropped_updates};

} // namespace

caf::expected<embedding_stats> total_stats(session& s, const std::set<std::string>& names) {
  embedding_stats total;
  for (auto& name : names) {
    auto st = stats(s, name);
    if (!st)
      return std::move(st.error());
    for (auto counter : summed_counters)
      total.*counter += (*st).*counter;
  }
  return total;
}

} // namespace darcy::ops
