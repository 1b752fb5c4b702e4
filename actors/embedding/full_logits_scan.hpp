// A shard's part of full logits: the logit of every row of a store for a batch of queries, and
// their backward, which applies the gradients of those logits to the rows and answers the
// gradients of the queries. The rows never leave the shard. The master checks requests with the
// same rules.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "messages/embedding/embedding_interfaces.hpp"
#include "stores/embedding/embedding_store.hpp"

namespace darcy::actors {

/// Fails with errc::dimension_mismatch unless `query_values` is a whole, nonzero number of
/// queries of `dim` values, and errc::non_finite for a NaN or Inf among `queries`.
caf::error check_full_logits_request(size_t dim, const std::vector<float>& queries);

/// Fails as check_full_logits_request does, and with errc::dimension_mismatch unless `dlogits`
/// holds queries × keys values, errc::non_finite for a NaN or Inf among them, and
/// errc::invalid_argument for a repeated key.
caf::error check_full_backward_request(size_t dim, const std::vector<std::string>& keys,
                                       const std::vector<float>& queries,
                                       const std::vector<float>& dlogits);

/// The logits of every row of `store` for `queries`; errc::batch_too_large, before any row is
/// read, when the store holds more than `max_rows` rows.
caf::expected<full_logits_part> scan_logits(stores::embedding_store& store,
                                            const std::vector<float>& queries, uint64_t max_rows);

/// d(loss)/d(queries) for d(loss)/d(logits) `dlogits` of the columns `keys` (rows read before
/// any changes); with `apply`, also applies d(loss)/d(row) to each key's row by the store's
/// optimizer. Keys the store no longer holds are left out of both. Checks as
/// check_full_backward_request, changing nothing on a failure.
caf::expected<std::vector<float>> apply_logit_gradients(stores::embedding_store& store,
                                                        const std::vector<std::string>& keys,
                                                        const std::vector<float>& queries,
                                                        const std::vector<float>& dlogits,
                                                        int64_t step, bool apply);

/// Joins shard parts column-wise, shard order: one row of logits per query.
full_logits_part merge_full_logits(std::vector<full_logits_part>& parts, size_t queries);

} // namespace darcy::actors
