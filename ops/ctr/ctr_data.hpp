// Writing a generated Criteo-format click file (`darcy data ctr`): the rows of a seeded
// compute::ctr_generator, with each row's true click probability beside them, and the figures
// every CTR model is measured against (click rate, Bayes-optimal AUC).
#pragma once

#include <cstdint>
#include <string>

#include <caf/expected.hpp>

#include "compute/ctr_synthetic.hpp"

namespace darcy::ops::ctr {

struct ctr_data_options {
  compute::ctr_generator_options generator;
  /// Rows [first_row, first_row + rows) of the generator's stream: a held-out file is a later
  /// range of the same stream.
  uint64_t first_row = 0;
  uint64_t rows = 0;
  /// The Criteo TSV (gzip when it ends in ".gz"); its probabilities go to out + ".probs", one
  /// per line with 6 decimals, in row order.
  std::string out;
};

struct ctr_data_summary {
  uint64_t rows = 0;
  uint64_t clicks = 0;
  /// The AUC of the written probabilities against the labels: no model can score higher in
  /// expectation.
  double bayes_auc = 0;
  double teacher_bias = 0;
};

/// Writes both files. errc::invalid_config for bad options (no rows, no path, the generator's
/// checks), errc::io_error when a file cannot be written.
caf::expected<ctr_data_summary> write_ctr_data(const ctr_data_options& o);

} // namespace darcy::ops::ctr
