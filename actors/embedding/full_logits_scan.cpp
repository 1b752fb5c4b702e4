#include "actors/embedding/full_logits_scan.hpp"

#include <cmath>
#include <set>
#include <unordered_map>

#include "compute/top_k.hpp"
#include "messages/error.hpp"

namespace darcy::actors {

namespace {

using row_matrix = compute::row_matrix;

bool all_finite(const std::vector<float>& values) {
  for (float v : values)
    if (!std::isfinite(v))
      return false;
  return true;
}

Eigen::Map<const row_matrix> as_matrix(const std::vector<float>& values, size_t cols) {
  auto c = static_cast<Eigen::Index>(cols);
  return {values.data(), c == 0 ? 0 : static_cast<Eigen::Index>(values.size()) / c, c};
}

} // namespace

caf::error check_full_logits_request(size_t dim, const std::vector<float>& queries) {
  if (dim == 0 || queries.empty() || queries.size() % dim != 0)
    return make_error(errc::dimension_mismatch, std::to_string(queries.size()) +
                                                  " query values are not a whole number of " +
                                                  std::to_string(dim) + "-dimensional queries");
  if (!all_finite(queries))
    return make_error(errc::non_finite, "full_logits: a query holds NaN or Inf");
  return {};
}

caf::error check_full_backward_request(size_t dim, const std::vector<std::string>& keys,
                                       const std::vector<float>& queries,
                                       const std::vector<float>& dlogits) {
  if (auto err = check_full_logits_request(dim, queries))
    return err;
  auto batch = queries.size() / dim;
  if (dlogits.size() != batch * keys.size())
    return make_error(errc::dimension_mismatch, std::to_string(dlogits.size()) +
                                                  " logit gradients for " + std::to_string(batch) +
                                                  " queries of " + std::to_string(keys.size()) +
                                                  " columns");
  if (!all_finite(dlogits))
    return make_error(errc::non_finite, "full_logits backward: a gradient is NaN or Inf");
  if (std::set<std::string_view>(keys.begin(), keys.end()).size() != keys.size())
    return make_error(errc::invalid_argument, "full_logits backward: a key is repeated");
  return {};
}

caf::expected<full_logits_part> scan_logits(stores::embedding_store& store,
                                            const std::vector<float>& queries, uint64_t max_rows) {
  auto dim = store.dim();
  if (auto err = check_full_logits_request(dim, queries))
    return err;
  if (auto rows = store.stats().rows; rows > max_rows)
    return make_error(errc::batch_too_large, "full_logits: the table holds " +
                                               std::to_string(rows) + " rows, above max_rows " +
                                               std::to_string(max_rows));
  full_logits_part part;
  std::vector<float> values;
  auto err = store.scan([&](std::string_view key, std::span<const float> row) {
    part.keys.emplace_back(key);
    values.insert(values.end(), row.begin(), row.end());
  });
  if (err)
    return err;
  if (part.keys.size() > max_rows)
    return make_error(errc::batch_too_large, "full_logits: the table holds " +
                                               std::to_string(part.keys.size()) +
                                               " rows, above max_rows " + std::to_string(max_rows));
  auto q = as_matrix(queries, dim);
  auto w = as_matrix(values, dim);
  part.logits.resize(static_cast<size_t>(q.rows()) * part.keys.size());
  Eigen::Map<row_matrix> out{part.logits.data(), q.rows(), w.rows()};
  out.noalias() = q * w.transpose();
  return part;
}

caf::expected<std::vector<float>> apply_logit_gradients(stores::embedding_store& store,
                                                        const std::vector<std::string>& keys,
                                                        const std::vector<float>& queries,
                                                        const std::vector<float>& dlogits,
                                                        int64_t step, bool apply) {
  auto dim = store.dim();
  if (auto err = check_full_backward_request(dim, keys, queries, dlogits))
    return err;
  auto d = static_cast<Eigen::Index>(dim);
  auto q = as_matrix(queries, dim);
  auto dl = as_matrix(dlogits, keys.size());
  std::unordered_map<std::string_view, Eigen::Index> column;
  for (size_t k = 0; k < keys.size(); ++k)
    column.emplace(keys[k], static_cast<Eigen::Index>(k));
  row_matrix w = row_matrix::Zero(static_cast<Eigen::Index>(keys.size()), d);
  std::vector<Eigen::Index> held;
  std::vector<std::string_view> views{keys.begin(), keys.end()};
  auto err = store.export_keys(
    views,
    [&](const stores::row_record& r) {
      auto c = column.at(r.key);
      w.row(c) = Eigen::Map<const Eigen::RowVectorXf>(r.values.data(), d);
      held.push_back(c);
    },
    [](std::string_view) {});
  if (err)
    return err;
  std::vector<float> dq(static_cast<size_t>(q.rows() * d));
  Eigen::Map<row_matrix>{dq.data(), q.rows(), d}.noalias() = dl * w;
  if (!apply || held.empty())
    return dq;
  row_matrix grads(static_cast<Eigen::Index>(held.size()), d);
  std::vector<std::string_view> held_keys;
  for (size_t i = 0; i < held.size(); ++i) {
    grads.row(static_cast<Eigen::Index>(i)).noalias() = dl.col(held[i]).transpose() * q;
    held_keys.push_back(keys[static_cast<size_t>(held[i])]);
  }
  if (auto update_err =
        store.update(held_keys, {grads.data(), static_cast<size_t>(grads.size())}, step))
    return update_err;
  return dq;
}

full_logits_part merge_full_logits(std::vector<full_logits_part>& parts, size_t queries) {
  full_logits_part out;
  for (auto& p : parts)
    out.keys.insert(out.keys.end(), std::make_move_iterator(p.keys.begin()),
                    std::make_move_iterator(p.keys.end()));
  out.logits.reserve(queries * out.keys.size());
  for (size_t b = 0; b < queries; ++b)
    for (auto& p : parts) {
      auto width = p.logits.size() / queries;
      auto first = p.logits.begin() + static_cast<std::ptrdiff_t>(b * width);
      out.logits.insert(out.logits.end(), first, first + static_cast<std::ptrdiff_t>(width));
    }
  return out;
}

} // namespace darcy::actors
