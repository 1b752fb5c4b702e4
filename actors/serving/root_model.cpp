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
    m.item_rows_.emplace(m.root_.item_names[c], static_cast<uint32_t>(c));
  return m;
}

std::string root_model::item_name(uint64_t id) const {
  return id < root_.item_names.size() ? root_.item_names[id] : std::to_string(id);
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
      uint64_t row = c.users;
      if (auto it = user_rows_.find(request.user); it != user_rows_.end()) {
        row = it->second;
      } else if (root_.user_names.empty() && !request.user.empty() &&
                 request.user.find_first_not_of("0123456789") == std::string::npos &&
                 request.user.size() < 20) {
        row = std::stoull(request.user);
      }
      if (c.users == 0)
        return make_error(errc::invalid_argument,
                          "this model has no users; give items or a vector");
      if (row >= c.users)
        return make_error(errc::not_found, "unknown user '" + request.user +
                                             "' (give the items of a new user instead)");
      auto at = root_.users.data() + row * c.dim;
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
  if (request.items.empty())
    return make_error(errc::invalid_argument, "a new user needs at least one item");
  if (!request.values.empty() && request.values.size() != request.items.size())
    return make_error(errc::invalid_argument, "values need one value per item");
  std::vector<uint32_t> ids;
  std::vector<float> values;
  for (size_t i = 0; i < request.items.size(); ++i) {
    auto& item = request.items[i];
    uint64_t row = c.items;
    if (auto it = item_rows_.find(item); it != item_rows_.end())
      row = it->second;
    else if (root_.item_names.empty() && !item.empty() && item.size() < 20 &&
             item.find_first_not_of("0123456789") == std::string::npos)
      row = std::stoull(item);
    if (row >= c.items)
      continue;
    ids.push_back(static_cast<uint32_t>(row));
    values.push_back(request.values.empty() ? 1.0f : request.values[i]);
  }
  if (ids.empty())
    return make_error(errc::not_found, "none of the " + std::to_string(request.items.size()) +
                                         " items is known to the model");
  compute::factor_view items{root_.items.data(), c.items, c.dim};
  if (c.kind != "wals") {
    // Without projection parameters, a new user is the mean of their items.
    std::vector<float> mean(c.dim, 0.0f);
    for (size_t i = 0; i < ids.size(); ++i)
      for (uint32_t d = 0; d < c.dim; ++d)
        mean[d] += values[i] * items.row(ids[i])[d];
    return mean;
  }
  wals_params p;
  p.dim = c.dim;
  p.lambda = static_cast<float>(c.lambda);
  p.sigma = static_cast<float>(c.sigma);
  p.alpha = static_cast<float>(c.alpha);
  p.weight_fn = c.weight == "identity" ? wals_weight_fn::identity : wals_weight_fn::log1p;
  std::span<const float> gramian{root_.gramian.data(), static_cast<size_t>(root_.gramian.size())};
  return to_expected(compute::project(items, gramian, ids, values, p));
}

} // namespace darcy::actors
