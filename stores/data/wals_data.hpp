// Loads the matrix of a WALS run from a wals_data_spec: (row, col, value) triples with string
// ids from TSV/CSV (Last.fm's user_artists.dat among them), or the synthetic generator; then
// the seeded hold-out split, then feature lists as extra columns (row features) and rows
// (column features). Ids are numbered in order of first appearance, so every process that
// loads the same spec gets the same numbering.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "compute/sparse_matrix.hpp"
#include "messages/wals/wals_values.hpp"

namespace darcy::stores {

struct wals_dataset {
  /// What WALS trains on: the observed entries minus the held-out ones, plus features.
  compute::csr_matrix matrix;
  /// The held-out entries (rows x the first `items` columns); empty without hold-out.
  compute::csr_matrix held_out;
  /// Training entries before features were added, for evaluation and popularity.
  compute::csr_matrix observed;
  /// Ids of rows and columns; empty for a synthetic matrix (ids are the decimal indices).
  std::vector<std::string> row_ids;
  std::vector<std::string> col_ids;
  /// Rows [0, users) and columns [0, items) are the matrix's own; the rest are features.
  uint64_t users = 0;
  uint64_t items = 0;
  /// Malformed lines skipped (skip_malformed only).
  uint64_t skipped_lines = 0;
};

/// Errors, each naming the file and line: errc::not_found for a missing file, errc::corrupt_file
/// for a malformed line (fewer than 3 fields, a value that is not a number) unless
/// skip_malformed, errc::invalid_argument for a negative or non-finite value, an unknown format,
/// or a matrix without entries.
caf::expected<wals_dataset> load_dataset(const wals_data_spec& spec, uint32_t threads = 1);

/// load_dataset, shared within this process: while one caller still holds the dataset of the
/// same spec (and the same file sizes and modification times), others get it without reading
/// again. WALS workers on one node then hold one copy, not one each.
caf::expected<std::shared_ptr<const wals_dataset>> load_shared_dataset(const wals_data_spec& spec);

/// The transpose of data->matrix, computed once in this process while anyone holds it, so that
/// the workers of one node share one.
std::shared_ptr<const compute::csr_matrix> shared_transpose(
  const std::shared_ptr<const wals_dataset>& data);

/// The display id of row or column `index` of `ids` (its decimal index when `ids` is empty).
std::string display_id(const std::vector<std::string>& ids, uint64_t index);

} // namespace darcy::stores
