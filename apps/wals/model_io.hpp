// A trained WALS model on disk, as `darcy wals train --out DIR` writes it and `recommend`
// reads it: meta.txt (params, sizes, losses), rows.txt and cols.txt (ids, one per line), U.f32
// and V.f32 (stores/matrix_file), and seen.tsv (each row's training columns, for exclusion).
#pragma once

#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "compute/sparse_matrix.hpp"
#include "messages/wals/wals_values.hpp"
#include "stores/checkpoint/matrix_file.hpp"

namespace darcy::wals {

struct model {
  wals_params params;
  /// Rows [0, users) and columns [0, items) are the matrix's own, the rest features.
  uint64_t users = 0;
  uint64_t items = 0;
  std::vector<std::string> row_ids;
  std::vector<std::string> col_ids;
  /// The value of a feature's entries in training (wals_data_spec::feature_value).
  float feature_value = 1;
  stores::float_matrix u;
  stores::float_matrix v;
  std::vector<double> losses;
  /// Training columns per row (may be empty: then nothing is excluded).
  compute::csr_matrix seen;
};

/// Creates `dir`; errc::io_error when a file cannot be written.
caf::error save_model(const std::string& dir, const model& m);

/// errc::not_found for a missing model, errc::corrupt_file for files that disagree.
caf::expected<model> load_model(const std::string& dir);

} // namespace darcy::wals
