// Readers that turn files into an example_table for make_dataset: delimited text (CSV, TSV)
// with a header row, IDX (the MNIST and Fashion-MNIST format, gzipped or not) and plain text
// lines. Damaged input fails with an error naming the file and the line or byte.
//
//   auto train = read_idx("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "pixels");
//   auto census = read_delimited("adult.csv", {.label_column = "income", .numeric = {"age"}});
#pragma once

#include <set>
#include <string>

#include <caf/expected.hpp>

#include "ops/estimator/input.hpp"

namespace darcy::ops::estimator {

struct delimited_options {
  char delimiter = ',';
  /// The column that becomes the label (a number per row); empty: no labels.
  std::string label_column;
  /// Columns read as numbers (width 1); every other column is a string feature.
  std::set<std::string> numeric;
  /// Splits a string cell into several values (a bag of words, say); 0: one value per cell.
  char multi_value = 0;
};

/// errc::not_found for a missing file; errc::corrupt_file naming the line for a row of another
/// column count or a number that does not parse; errc::invalid_config when a named column
/// is not in the header.
caf::expected<example_table> read_delimited(const std::string& path, const delimited_options& o);

/// Images of an IDX3 file as the numeric feature `key` (rows·cols values per example, scaled
/// to [0, 1]) and labels from an IDX1 file (empty path: none). Files may be gzipped.
/// errc::corrupt_file for a bad magic number, a truncated file or counts that differ.
caf::expected<example_table> read_idx(const std::string& images, const std::string& labels,
                                      const std::string& key);

/// One example per non-empty line: its whitespace-separated tokens as the string feature `key`.
caf::expected<example_table> read_text_lines(const std::string& path, const std::string& key);

} // namespace darcy::ops::estimator
