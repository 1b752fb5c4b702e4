// The root sub-model of a served version, ready to turn requests into query vectors: a known
// user's factors, a new user projected from the items they interacted with and their features
// (WALS's cold start, as `darcy wals recommend --items` does), or a vector given as is; and item
// ids back to names.
#pragma once

#include <optional>
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
  /// given to a model without users, a new user with neither items nor features;
  /// errc::not_found for an unknown user or when none of the items and features is known
  /// (unknown ones are skipped).
  caf::expected<std::vector<float>> query_of(const topk_request& request) const;

  /// The name of item `id`: its name in the export, else the id as text.
  std::string item_name(uint64_t id) const;

  /// Whether the export has an item named `name` (by number when it has no names).
  bool has_item(const std::string& name) const;

  /// A new item's vector, as a query of the model's metric: one projection step from its
  /// features (value config().feature_value each) and its users (values, or 1 each), against
  /// the users' Gramian. errc::invalid_argument for an item of neither, values of another count
  /// than users, or a negative or non-finite value; errc::not_found when none of them is known;
  /// errc::unsupported for a model that is not WALS or has no users' Gramian.
  caf::expected<std::vector<float>> project_item(const new_item& item) const;

private:
  caf::expected<std::vector<float>> project(const topk_request& request) const;
  /// Rows gathered for a projection, values.size() rows of dim floats, with a value each.
  struct gathered {
    std::vector<float> rows;
    std::vector<float> values;
  };
  /// The factors of the known ones of `names` (rows of `factors` by `name_rows`, or by number
  /// below `count` when not `named`) with `values` (or 1 each), then of the known ones of
  /// `features` (rows of `feature_factors` by `feature_rows`) with the model's feature value.
  gathered gather(const std::vector<std::string>& names, const std::vector<float>& values,
                  const std::unordered_map<std::string, uint64_t>& name_rows, bool named,
                  uint64_t count, const float* factors, const std::vector<std::string>& features,
                  const std::unordered_map<std::string, uint64_t>& feature_rows,
                  const float* feature_factors) const;
  /// One projection step against `rows` (values.size() rows of dim floats) and `gramian`.
  caf::expected<std::vector<float>> solve(const std::vector<float>& rows,
                                          const std::vector<float>& values,
                                          const compute::row_matrix& gramian) const;
  /// The row of `name` in `rows`, else its number when `names` is empty and it is one below
  /// `count`; nullopt otherwise.
  static std::optional<uint64_t> row_of(const std::string& name,
                                        const std::unordered_map<std::string, uint64_t>& rows,
                                        bool named, uint64_t count);

  std::string version_;
  stores::export_root root_;
  std::unordered_map<std::string, uint64_t> user_rows_;
  std::unordered_map<std::string, uint64_t> item_rows_;
  std::unordered_map<std::string, uint64_t> user_feature_rows_;
  std::unordered_map<std::string, uint64_t> item_feature_rows_;
};

} // namespace darcy::actors
