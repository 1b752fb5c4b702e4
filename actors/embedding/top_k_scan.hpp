// A shard's part of distributed top-k: scans a store's rows in blocks and keeps, per query, the
// k best rows by inner product, inner product with a bias, or cosine (normalised on the fly, so
// no table of unit vectors is needed). The master checks requests with the same rules.
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "actors/embedding/shard_tables.hpp"
#include "messages/embedding/embedding_interfaces.hpp"
#include "stores/embedding/embedding_store.hpp"

namespace darcy::actors {

/// Fails with errc::invalid_argument for k = 0, and errc::dimension_mismatch unless
/// `query_values` is a whole, nonzero number of queries for rows of `dim` values under `score`.
caf::error check_top_k_request(size_t dim, size_t query_values, uint32_t k, top_k_score score);

/// The top k rows of `store` per query; fails as check_top_k_request does.
caf::expected<top_k_result> scan_top_k(stores::embedding_store& store,
                                       const std::vector<float>& queries, uint32_t k,
                                       top_k_score score);

/// The top k rows of `table` per query from its ANN index (errc::invalid_config without one),
/// first indexing the changes older than q.max_staleness_ms; checks as check_top_k_request.
/// The caller holds the table's lock, and has merged the rows of a sync still staged.
caf::expected<top_k_result> approximate_top_k(shard_table& table, const std::vector<float>& queries,
                                              uint32_t k, top_k_score score, const ann_query& q);

/// Merges shard answers into the global top k per query; the staleness is the largest.
top_k_result merge_top_k_results(const std::vector<top_k_result>& parts, size_t queries,
                                 uint32_t k);

} // namespace darcy::actors
