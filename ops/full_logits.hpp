// Full-softmax logits over a whole embedding table: the service computes the logit of every row
// for each example on the shards that hold the rows, and their backward applies the gradients
// there; no row crosses to the caller. For label tables small enough that sampling loses more
// than it saves (see sampled_logits in embedding_ops.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "ops/embedding_ops.hpp"

namespace darcy::ops {

/// Logits of a batch against every row of one table. Column c is the row of keys[c], in the
/// shards' order (not sorted, and not stable across calls while the table changes); row b is
/// example b. Labels of example b's positives are 1 / (its positive count), 0 elsewhere.
struct full_logits_result {
  matrix logits;
  matrix labels;
  std::vector<std::string> keys;

  /// Sends d(loss)/d(logits) to the shards, which apply d(loss)/d(row) to their rows with the
  /// table's optimizer, and returns d(loss)/d(activations) by the rows as they were just
  /// before. Rows evicted since the forward get no gradient and add nothing. Fails with
  /// errc::dimension_mismatch for a wrong shape and errc::non_finite for NaN or Inf, changing
  /// nothing.
  caf::expected<matrix> backward(const matrix& dlogits, int64_t step = 0) const;

  // Kept for backward().
  session* owner = nullptr;
  std::string name;
  matrix activations;
};

/// The full logits a·w of every row of embedding `name` (created from `config` on first use)
/// for each row a of `activations` (batch × dim), with `positive_keys[b]` example b's positives
/// (at least one each). The positives are looked up first, so that a new one gets its row as
/// admission allows; a positive that admission refuses has no column, and its share of the
/// labels is lost. Fails with errc::batch_too_large when the table holds more than `max_rows`
/// rows (use sampled_logits there): before any positive is looked up when it held them
/// already, after when the positives' new rows took it there, errc::empty_batch for no examples,
/// errc::dimension_mismatch for activations of another shape, errc::non_finite for NaN or Inf
/// in them, and errc::invalid_argument for an example without positives.
caf::expected<full_logits_result> full_logits(
  session& s, const std::vector<std::vector<std::string>>& positive_keys, const matrix& activations,
  const de_config& config, const std::string& name, uint64_t max_rows);

} // namespace darcy::ops
