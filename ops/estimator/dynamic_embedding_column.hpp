// dynamic_embedding_column: a feature column of raw strings backed by the dynamic embedding
// service, with no vocabulary and no hash bucket. A new string gets a row as the embedding's
// admission policy allows; backward() sends the rows' gradients to the service, whose own
// optimizer (the embedding's de_config) applies them.
//
//   de_config words{.dim = 16};
//   words.optimizer = {optimizer_kind::adagrad, 0.1f};
//   auto column = dynamic_embedding_column(session, "words", words);
//   auto wide = dynamic_embedding_column(session, *crossed_words, {.dim = 8});  // sparse ids
//   input_layer<float> in{{*column, *wide}};
#pragma once

#include <string>

#include <caf/expected.hpp>

#include "compute/estimator/feature_columns.hpp"
#include "messages/embedding/embedding_config.hpp"
#include "ops/session.hpp"

namespace darcy::ops::estimator {

/// The rows of the strings of feature `key` in embedding `config.name` (the key when empty),
/// combined per example; an example without strings gives zeros. `s` must outlive the column.
/// errc::invalid_config for dimension 0.
caf::expected<compute::estimator::dense_ptr<float>> dynamic_embedding_column(
  session& s, std::string key, de_config config,
  compute::estimator::combiner how = compute::estimator::combiner::mean);

/// As above over the bucket ids of a categorical column (hashed, crossed, ...): the table's
/// rows are created as ids are first seen, so a column of millions of buckets costs only the
/// rows in use, and they train in the service rather than as dense variables. Embedding
/// `config.name` defaults to the column's name.
caf::expected<compute::estimator::dense_ptr<float>> dynamic_embedding_column(
  session& s, compute::estimator::categorical_ptr column, de_config config,
  compute::estimator::combiner how = compute::estimator::combiner::mean);

} // namespace darcy::ops::estimator
