// Criteo-format click files as Estimator input: batches read streaming from the file (plain or
// gzip), so a file larger than memory trains unchanged. Features: "ints", the 13 counts (an
// empty field is 0), and "C1" … "C26", each row's raw 8-hex-digit string of that field (none
// when the field is empty); labels 0 or 1.
//
//   auto train = ctr_file_input("train.tsv.gz", {.batch_size = 128, .epochs = 1});
//   estimator.train(train);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ops/estimator/input.hpp"
#include "stores/data/ctr_file.hpp"

namespace darcy::ops::ctr {

inline constexpr const char* ctr_ints_key = "ints";

/// "C1" … "C26": the key of categorical field `field` (0-based).
std::string ctr_field_key(size_t field);

struct ctr_input_options {
  size_t batch_size = 128;
  /// Passes over the file; 0 repeats forever.
  uint32_t epochs = 1;
  /// Only the first rows of each pass (0: all).
  uint64_t max_rows = 0;
  /// Only rows r with r % shards == shard (0-based among the rows a pass reads): a worker's
  /// share of one file.
  uint32_t shard = 0;
  uint32_t shards = 1;
  /// Malformed lines are counted and skipped instead of ending the input with their file:line.
  bool skip_malformed = false;
};

/// Rows gathered into one batch of ctr_file_input's features and labels.
class ctr_batch_builder {
public:
  void add(const stores::ctr_row& row);
  size_t rows() const { return labels_.size(); }
  /// The batch of the rows added since the last take (rows() must be positive); starts afresh.
  estimator::batch take();

private:
  std::vector<double> ints_;
  std::vector<std::vector<std::vector<std::string>>> cats_ =
    std::vector<std::vector<std::vector<std::string>>>(compute::ctr_cat_fields);
  std::vector<float> labels_;
};

/// The :predict instances of rows `rows` of `t`, a table of ctr_batch_builder's features: one
/// object a row, with its integer features and each categorical field's strings.
nlohmann::json ctr_instances(const estimator::example_table& t, const std::vector<uint32_t>& rows);

/// The batches of `path`, in file order. Opening the pipeline fails with errc::io_error when
/// the file cannot be opened, errc::invalid_config for batch_size 0 or a shard ≥ shards. The
/// position is "<pass>:<rows read in it>": a seek reopens the file and skips that many rows.
estimator::input_fn ctr_file_input(std::string path, ctr_input_options options);

} // namespace darcy::ops::ctr
