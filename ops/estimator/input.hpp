// Input of the Estimator: batches of parsed features and labels from a pipeline that can say
// where it stands and continue from there, so that a checkpoint resumes mid-epoch with the same
// batches. make_dataset batches an in-memory table, shuffled per epoch by a seed, repeated.
//
//   auto table = std::make_shared<example_table>(...);          // from a reader
//   input_fn train_input = [table] { return make_dataset(table, {.batch_size = 128, .epochs = 0});
//   };
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "compute/estimator/feature_columns.hpp"
#include "ops/estimator/model_context.hpp"

namespace darcy::ops::estimator {

struct batch {
  compute::estimator::feature_map features;
  /// rows × label columns; empty when the input has no labels (predict).
  matrix labels;
  size_t rows() const;
};

class input_pipeline {
public:
  virtual ~input_pipeline() = default;
  /// The next batch, or nullopt at the end of the input.
  virtual caf::expected<std::optional<batch>> next() = 0;
  /// Where the pipeline stands, as text a checkpoint keeps.
  virtual std::string position() const = 0;
  /// Continues from a position() of a pipeline made the same way; errc::invalid_argument for
  /// text it cannot have written.
  virtual caf::error seek(const std::string& position) = 0;
};

using input_fn = std::function<caf::expected<std::unique_ptr<input_pipeline>>()>;

/// Examples in memory: every feature holds all rows; labels has one row per example or none.
struct example_table {
  compute::estimator::feature_map features;
  matrix labels;
  size_t rows() const;
};

struct dataset_options {
  size_t batch_size = 32;
  /// Passes over the table; 0 repeats forever.
  uint32_t epochs = 1;
  bool shuffle = true;
  uint64_t seed = 1;
  /// Drop a last batch smaller than batch_size.
  bool drop_remainder = false;
};

/// Batches of `table` in order, or in a permutation drawn per epoch from (seed, epoch).
/// errc::invalid_config for batch_size 0 or features of different row counts.
caf::expected<std::unique_ptr<input_pipeline>> make_dataset(
  std::shared_ptr<const example_table> table, dataset_options options);

/// `inner` read ahead by a thread of its own, up to `depth` batches (at least 1). Its position
/// is that of the last batch handed out, so a checkpoint never skips read-ahead batches.
/// `on_read`, when set, is called in that thread with each batch read, in order, once the
/// batch is queued behind at least one other: the look-ahead that hands a batch's keys to the
/// embedding service (prefetch_rows) while the batches before it train. A batch queued with
/// none before it (the trainer has caught up with the reader) is passed over, so that a slow
/// on_read lets the reader catch up. It must not change the batch.
std::unique_ptr<input_pipeline> prefetch(std::unique_ptr<input_pipeline> inner, size_t depth,
                                         std::function<void(const batch&)> on_read = {});

/// The rows `which` of `table`, in that order.
batch gather(const example_table& table, const std::vector<size_t>& which);

/// The first batch of a fresh pipeline of `input`; errc::invalid_argument "<who>: the input is
/// empty" when it has none.
caf::expected<batch> first_batch(const input_fn& input, const std::string& who);

} // namespace darcy::ops::estimator
