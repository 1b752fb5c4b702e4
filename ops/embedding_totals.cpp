#include "ops/embedding_totals.hpp"

#include "ops/embedding_ops.hpp"

namespace darcy::ops {

caf::expected<embedding_stats> total_stats(session& s, const std::set<std::string>& names) {
  embedding_stats total;
  for (auto& name : names) {
    auto st = stats(s, name);
    if (!st)
      return std::move(st.error());
    total.rows += st->rows;
    total.bytes += st->bytes;
    total.raw_bytes += st->raw_bytes;
    total.cached_rows += st->cached_rows;
    total.cache_capacity += st->cache_capacity;
    total.tier_hits += st->tier_hits;
    total.tier_misses += st->tier_misses;
    total.disk_reads += st->disk_reads;
    total.prefetched_rows += st->prefetched_rows;
    total.disk_bytes += st->disk_bytes;
    total.evictions += st->evictions;
    total.dropped_updates += st->dropped_updates;
  }
  return total;
}

} // namespace darcy::ops
