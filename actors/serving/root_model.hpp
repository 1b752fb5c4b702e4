// The root sub-model of a served version, ready to turn requests into query vectors: a known
// user's factors, a new user projected from the items they interacted with (WALS's cold start,
// as `darcy wals recommend --items` does), or a vector given as is; and item ids back to names.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <caf/expected.hpp>

#include "messages/serving/serving_values.hpp"
#include "stores/serving/serving_export.hpp"

namespace darcy::actors {

class root_model {
public:
  /// Loads the root sub-model of `version` (empty: the newest) of the export in `model_dir`;
  /// fails as stores::load_export_root does.
  static caf::expected<root_model> load(const std::string& model_dir, const std::string& version);

  const stores::export_config& config() const { return root_.config; }
  const std::string& version() const { return version_; }

  /// The query of `request`, normalised for a cosine model. errc::dimension_mismatch for a
  /// vector of another dimension; errc::invalid_argument for a NaN or infinite value, a k of 0
  /// or above the item count, values of another count than items, a negative value, or a user
  /// given to a model without users; errc::not_found for an unknown user or when none of the
  /// items is known (unknown items are skipped).
  caf::expected<std::vector<float>> query_of(const topk_request& request) const;

  /// The name of item `id`: its name in the export, else the id as text.
  std::string item_name(uint64_t id) const;

private:
  caf::expected<std::vector<float>> project(const topk_request& request) const;

  std::string version_;
  stores::export_root root_;
  std::unordered_map<std::string, uint64_t> user_rows_;
  std::unordered_map<std::string, uint32_t> item_rows_;
};

} // namespace darcy::actors
