#include "ops/full_logits.hpp"

#include <set>
#include <unordered_map>

#include "messages/error.hpp"
#include "runtime/ask.hpp"

namespace darcy::ops {

caf::expected<full_logits_result> full_logits(
  session& s, const std::vector<std::vector<std::string>>& positive_keys, const matrix& activations,
  const de_config& config, const std::string& name, uint64_t max_rows) {
  if (auto err = check_logit_inputs("full_logits", positive_keys, activations, config.dim))
    return err;
  auto batch = positive_keys.size();
  std::set<std::string> positives;
  for (auto& keys : positive_keys)
    positives.insert(keys.begin(), keys.end());
  if (!activations.allFinite())
    return make_error(errc::non_finite, "full_logits: the activations hold NaN or Inf");
  // A table already above max_rows gets no positive's row.
  auto held = stats(s, name);
  if (!held && !is(held.error(), errc::unknown_embedding))
    return std::move(held.error());
  if (held && held->rows > max_rows)
    return make_error(errc::batch_too_large, "full_logits: '" + name + "' holds " +
                                               std::to_string(held->rows) +
                                               " rows, above max_rows " + std::to_string(max_rows));
  auto created =
    dynamic_embedding_lookup(s, {positives.begin(), positives.end()}, config, name, false);
  if (!created)
    return std::move(created.error());
  auto master = s.embeddings();
  if (!master)
    return std::move(master.error());
  std::vector<float> queries(activations.data(), activations.data() + activations.size());
  auto part = runtime::ask<full_logits_part>(s.system(), *master, s.timeout(),
                                             full_logits_atom::value, name, queries, max_rows);
  if (!part)
    return std::move(part.error());
  auto b_rows = static_cast<Eigen::Index>(batch);
  auto cols = static_cast<Eigen::Index>(part->keys.size());
  full_logits_result result;
  result.logits = Eigen::Map<const matrix>(part->logits.data(), b_rows, cols);
  result.labels = matrix::Zero(b_rows, cols);
  std::unordered_map<std::string_view, Eigen::Index> column;
  for (Eigen::Index c = 0; c < cols; ++c)
    column.emplace(part->keys[static_cast<size_t>(c)], c);
  for (size_t b = 0; b < batch; ++b) {
    std::set<std::string> own{positive_keys[b].begin(), positive_keys[b].end()};
    auto share = 1.0f / static_cast<float>(positive_keys[b].size());
    for (auto& key : own)
      if (auto c = column.find(key); c != column.end())
        result.labels(static_cast<Eigen::Index>(b), c->second) = share;
  }
  result.keys = std::move(part->keys);
  result.owner = &s;
  result.name = name;
  result.activations = activations;
  return result;
}

caf::expected<matrix> full_logits_result::backward(const matrix& dlogits, int64_t step) const {
  if (dlogits.rows() != logits.rows() || dlogits.cols() != logits.cols())
    return make_error(errc::dimension_mismatch, "dlogits do not have the shape of the logits");
  if (owner == nullptr)
    return make_error(errc::invalid_argument, "full_logits: backward of an empty result");
  auto master = owner->embeddings();
  if (!master)
    return std::move(master.error());
  std::vector<float> queries(activations.data(), activations.data() + activations.size());
  std::vector<float> grads(dlogits.data(), dlogits.data() + dlogits.size());
  auto dq =
    runtime::ask<std::vector<float>>(owner->system(), *master, owner->timeout(),
                                     full_backward_atom::value, name, keys, queries, grads, step);
  if (!dq)
    return std::move(dq.error());
  if (dq->size() != queries.size())
    return make_error(errc::dimension_mismatch, "full_logits backward: the service answered " +
                                                  std::to_string(dq->size()) + " values for " +
                                                  std::to_string(queries.size()));
  return matrix{Eigen::Map<const matrix>(dq->data(), activations.rows(), activations.cols())};
}

} // namespace darcy::ops
