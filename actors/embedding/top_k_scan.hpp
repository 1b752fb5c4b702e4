// A shard's part of distributed top-k: scans a store's rows in blocks and keeps, per query, the
// k best rows by inner product (with the bias trick when asked). Shared by the shard actor.
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "messages/embedding/embedding_interfaces.hpp"
#include "stores/embedding_store.hpp"

namespace darcy::actors {

/// Fails with errc::dimension_mismatch when `queries` is not a whole number of queries of
/// dim (or dim - 1 with_bias) values, and errc::invalid_argument for k = 0.
caf::expected<top_k_result> scan_top_k(stores::embedding_store& store,
                                       const std::vector<float>& queries, uint32_t k,
                                       bool with_bias);

/// Merges shard answers into the global top k per query.
top_k_result merge_top_k_results(const std::vector<top_k_result>& parts, size_t queries,
                                 uint32_t k);

} // namespace darcy::actors
