// dynamic_embedding_column: a feature column of raw strings backed by the dynamic embedding
// service, with no vocabulary and no hash bucket. A new string gets a row as the embedding's
// admission policy allows; backward() sends the rows' gradients to the service, whose own
// optimizer (the embedding's de_config) applies them. dynamic_embedding_columns groups several
// fields into one column with one lookup per batch.
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

/// One field of a group: the strings of feature `key`, or the bucket ids of `column` when it
/// is set (then `key` defaults to the column's name), in embedding `config.name` (`key` when
/// empty).
struct dynamic_field {
  std::string key;
  compute::estimator::categorical_ptr column;
  de_config config;
};

/// The rows of several fields side by side (width: the sum of their dims, in order), all
/// fields looked up in one request to the service and their gradients sent in one backward: a
/// model of tens of sparse fields (click-through prediction) makes one round trip a step
/// instead of one per field. errc::invalid_config for no field, a dimension of 0, or two
/// fields of one embedding.
caf::expected<compute::estimator::dense_ptr<float>> dynamic_embedding_columns(
  session& s, std::vector<dynamic_field> fields,
  compute::estimator::combiner how = compute::estimator::combiner::mean);

/// Hands the keys that `column` (made by dynamic_embedding_column(s)) will look up for
/// `features` to the service ahead of the step that uses them (ops::prefetch_rows): the
/// trainer's look-ahead. Nothing for any other column. May run in a thread other than the
/// one training with the column. Fails as feature lookup does (a missing feature) or as
/// ops::prefetch_rows.
caf::error prefetch_rows(const compute::estimator::dense_ptr<float>& column,
                         const compute::estimator::feature_map& features);

/// Seconds this thread has spent in the embedding service for dynamic embedding columns: in
/// lookups (inside a step's forward) and in backward passes (inside its backward), so that a
/// step's time splits into the tables' share and the rest.
struct embedding_seconds {
  double lookup = 0;
  double backward = 0;
};
embedding_seconds embedding_seconds_of_this_thread();

} // namespace darcy::ops::estimator
