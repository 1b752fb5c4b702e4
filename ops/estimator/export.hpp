// Exports of an Estimator's model, and the model loaded back without the code that trained
// it. An export is a numbered version under its root (the one checkpoint mechanism): the
// model's graph as traced from one predict call (layers, feature column specs, head) and the
// weights by name. exported_model interprets the graph on those weights.
//
//   auto version = export_model(trained, "exports/fashion", sample_input);   // "1", "2", ...
//   auto model = exported_model::load("exports/fashion");                   // the newest
//   auto probabilities = model->predict(batch);
#pragma once

#include <map>
#include <memory>
#include <string>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "compute/estimator/feature_columns.hpp"
#include "compute/estimator/heads.hpp"
#include "ops/estimator/estimator.hpp"

namespace darcy::ops::estimator {

/// Traces e's model in predict mode on the first batch of `sample` and writes a new version
/// under `dir`, keeping the `keep` newest; returns its number. errc::invalid_argument when the
/// sample is empty or the model does not end in head_spec.
caf::expected<std::string> export_model(estimator& e, const std::string& dir, const input_fn& sample,
                                        size_t keep = 5);

class exported_model {
public:
  /// Loads `version` (empty: the newest) of the exports under `dir`. errc::not_found for no
  /// export; errc::corrupt_file for damaged files; errc::invalid_config for a graph this
  /// build cannot run; errc::dimension_mismatch when the weights do not fit the graph.
  static caf::expected<std::unique_ptr<exported_model>> load(const std::string& dir,
                                                             const std::string& version = "");

  /// The head's predictions for `b` (labels are not needed). errc::invalid_argument for
  /// features the columns cannot read.
  caf::expected<matrix> predict(const batch& b);

  const std::string& version() const { return version_; }

private:
  exported_model() = default;

  std::string version_;
  nlohmann::json graph_;
  variable_store vars_;
  std::map<std::string, std::shared_ptr<compute::nn::parameter<float>>> tables_;
  /// One input layer per "input" op, in graph order.
  std::vector<std::unique_ptr<compute::estimator::input_layer<float>>> inputs_;
  std::unique_ptr<compute::estimator::head<float>> head_;
};

} // namespace darcy::ops::estimator
