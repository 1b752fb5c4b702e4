#include "actors/serving/root_model.hpp"

#include <cmath>

#include "compute/finite.hpp"
#include "compute/wals_math.hpp"
#include "messages/error.hpp"

namespace darcy::actors {

namespace {

caf::error check_finite(std::span<const float> xs, const std::string& what) {
  if (auto i = compute::first_non_finite(xs); i < xs.size())
    return make_error(errc::invalid_argument,
                      what + " holds a NaN or infinite value at " + std::to_string(i));
  return {};
}

void normalise(std::vector<float>& v) {
  double norm = 0;
  for (auto x : v)
    norm += double{x} * x;
  if (norm > 0)
    for (auto& x : v)
      x = static_cast<float>(x / std::sqrt(norm));
}

} // namespace

caf::expected<root_model> root_model::load(const std::string& model_dir,
                                           const std::string& version) {
  auto manifest = stores::read_export_manifest(model_dir, version);
  if (!manifest)
    return std::move(manifest.error());
  auto root = stores::load_export_root(model_dir, *manifest);
  if (!root)
    return std::move(root.error());
  root_model m;
  m.version_ = manifest->checkpoint;
  m.root_ = std::move(*root);
  for (uint64_t r = 0; r < m.root_.user_names.size(); ++r)
    m.user_rows_.emplace(m.root_.user_names[r], r);
  for (uint64_t c = 0; c < m.root_.item_names.size(); ++c)
    m.item_rows_.emplace(m.root_.item_names[c], c);
  for (uint64_t f = 0; f < m.root_.user_feature_names.size(); ++f)
    m.user_feature_rows_.emplace(m.root_.user_feature_names[f], f);
  for (uint64_t f = 0; f < m.root_.item_feature_names.size(); ++f)
    m.item_feature_rows_.emplace(m.root_.item_feature_names[f], f);
  return m;
}

std::string root_model::item_name(uint64_t id) const {
  return id < root_.item_names.size() ? root_.item_names[id] : std::to_string(id);
}

std::optional<uint64_t> root_model::row_of(const std::string& name,
                                           const std::unordered_map<std::string, uint64_t>& rows,
                                           bool named, uint64_t count) {
  if (auto it = rows.find(name); it != rows.end())
    return it->second;
  if (named || name.empty() || name.size() >= 20 ||
      name.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  auto row = std::stoull(name);
  return row < count ? std::optional<uint64_t>{row} : std::nullopt;
}

bool root_model::has_item(const std::string& name) const {
  return row_of(name, item_rows_, !root_.item_names.empty(), root_.config.items).has_value();
}

caf::expected<std::vector<float>> root_model::query_of(const topk_request& request) const {
  auto& c = root_.config;
  if (request.k == 0 || request.k > c.items)
    return make_error(errc::invalid_argument, "k must be between 1 and the model's " +
                                                std::to_string(c.items) + " items, not " +
                                                std::to_string(request.k));
  std::vector<float> query;
  switch (request.kind) {
    case query_kind::vector:
      if (request.vector.size() != c.dim)
        return make_error(errc::dimension_mismatch,
                          "vector of " + std::to_string(request.vector.size()) +
                            " values for a model of dimension " + std::to_string(c.dim));
      if (auto err = check_finite(request.vector, "vector"))
        return err;
      query = request.vector;
      break;
    case query_kind::user: {
      if (c.users == 0)
        return make_error(errc::invalid_argument,
                          "this model has no users; give items or a vector");
      auto row = row_of(request.user, user_rows_, !root_.user_names.empty(), c.users);
      if (!row)
        return make_error(errc::not_found, "unknown user '" + request.user +
                                             "' (give the items of a new user instead)");
      auto at = root_.users.data() + *row * c.dim;
      query.assign(at, at + c.dim);
      break;
    }
    case query_kind::items: {
      auto projected = project(request);
      if (!projected)
        return projected;
      query = std::move(*projected);
      break;
    }
  }
  if (c.metric == "cosine")
    normalise(query);
  return query;
}

caf::expected<std::vector<float>> root_model::project(const topk_request& request) const {
  auto& c = root_.config;
  if (request.items.empty() && request.features.empty())
    return make_error(errc::invalid_argument, "a new user needs at least one item or feature");
  if (!request.values.empty() && request.values.size() != request.items.size())
    return make_error(errc::invalid_argument, "values need one value per item");
  auto [rows, values] =
    gather(request.items, request.values, item_rows_, !root_.item_names.empty(), c.items,
           root_.items.data(), request.features, user_feature_rows_, root_.user_features.data());
  if (values.empty())
    return make_error(errc::not_found, "none of the " + std::to_string(request.items.size()) +
                                         " items and " + std::to_string(request.features.size()) +
                                         " features is known to the model");
  if (c.kind != "wals") {
    // Without projection parameters, a new user is the mean of their items.
    std::vector<float> mean(c.dim, 0.0f);
    for (size_t i = 0; i < values.size(); ++i)
      for (uint32_t d = 0; d < c.dim; ++d)
        mean[d] += values[i] * rows[i * c.dim + d];
    return mean;
  }
  return solve(rows, values, root_.gramian);
}

root_model::gathered root_model::gather(
  const std::vector<std::string>& names, const std::vector<float>& values,
  const std::unordered_map<std::string, uint64_t>& name_rows, bool named, uint64_t count,
  const float* factors, const std::vector<std::string>& features,
  const std::unordered_map<std::string, uint64_t>& feature_rows,
  const float* feature_factors) const {
  auto dim = root_.config.dim;
  gathered out;
  auto take = [&](const float* row, float value) {
    out.rows.insert(out.rows.end(), row, row + dim);
    out.values.push_back(value);
  };
  for (size_t i = 0; i < names.size(); ++i)
    if (auto row = row_of(names[i], name_rows, named, count))
      take(factors + *row * dim, values.empty() ? 1.0f : values[i]);
  for (auto& feature : features)
    if (auto it = feature_rows.find(feature); it != feature_rows.end())
      take(feature_factors + it->second * dim, static_cast<float>(root_.config.feature_value));
  return out;
}

caf::expected<std::vector<float>> root_model::solve(const std::vector<float>& rows,
                                                    const std::vector<float>& values,
                                                    const compute::row_matrix& gramian) const {
  auto& c = root_.config;
  std::vector<uint32_t> ids(values.size());
  for (uint32_t i = 0; i < ids.size(); ++i)
    ids[i] = i;
  wals_params p;
  p.dim = c.dim;
  p.lambda = static_cast<float>(c.lambda);
  p.sigma = static_cast<float>(c.sigma);
  p.alpha = static_cast<float>(c.alpha);
  p.weight_fn = c.weight == "identity" ? wals_weight_fn::identity : wals_weight_fn::log1p;
  return to_expected(compute::project({rows.data(), values.size(), c.dim},
                                      {gramian.data(), static_cast<size_t>(gramian.size())}, ids,
                                      values, p));
}

caf::expected<std::vector<float>> root_model::project_item(const new_item& item) const {
  auto& c = root_.config;
  if (c.kind != "wals" || root_.user_gramian.size() == 0)
    return make_error(errc::unsupported,
                      "model version " + version_ +
                        " cannot project new items: it is not a WALS export with users "
                        "(export it again with this version of darcy)");
  if (item.features.empty() && item.users.empty())
    return make_error(errc::invalid_argument,
                      "new item '" + item.name + "' needs at least one feature or user");
  if (!item.values.empty() && item.values.size() != item.users.size())
    return make_error(errc::invalid_argument,
                      "new item '" + item.name + "': values need one value per user");
  auto [rows, values] =
    gather(item.users, item.values, user_rows_, !root_.user_names.empty(), c.users,
           root_.users.data(), item.features, item_feature_rows_, root_.item_features.data());
  if (values.empty())
    return make_error(errc::not_found, "new item '" + item.name + "': none of its " +
                                         std::to_string(item.users.size()) + " users and " +
                                         std::to_string(item.features.size()) +
                                         " features is known to the model");
  auto vector = solve(rows, values, root_.user_gramian);
  if (vector && c.metric == "cosine")
    normalise(*vector);
  return vector;
}

} // namespace darcy::actors
