#include "ops/embedding_ops.hpp"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "messages/error.hpp"
#include "runtime/ask.hpp"

namespace darcy::ops {

namespace {

caf::expected<embedding_master_actor> service_with(session& s, const de_config& config,
                                                   const std::string& name) {
  auto cfg = config;
  cfg.name = name;
  if (auto err = s.ensure_embedding(cfg))
    return err;
  return s.embeddings();
}

matrix to_matrix(std::vector<float>&& flat, size_t rows, size_t cols) {
  matrix result(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  std::memcpy(result.data(), flat.data(), flat.size() * sizeof(float));
  return result;
}

} // namespace

caf::error lookup_handle::backward(std::span<const float> grads, int64_t step) const {
  if (session_ == nullptr)
    return make_error(errc::invalid_argument, "backward on an empty lookup handle");
  if (grads.size() != keys_.size() * dim_)
    return make_error(errc::dimension_mismatch,
                      std::to_string(grads.size()) + " gradient values for " +
                        std::to_string(keys_.size()) + " rows of dim " + std::to_string(dim_));
  auto master = session_->embeddings();
  if (!master)
    return std::move(master.error());
  auto ok = runtime::ask<ok_atom>(session_->system(), *master, session_->timeout(),
                                  update_atom::value, name_, keys_,
                                  std::vector<float>(grads.begin(), grads.end()), step);
  return ok ? caf::error{} : std::move(ok.error());
}

caf::error lookup_handle::backward(const matrix& grads, int64_t step) const {
  if (static_cast<size_t>(grads.cols()) != dim_)
    return make_error(errc::dimension_mismatch, "gradient rows have " +
                                                  std::to_string(grads.cols()) +
                                                  " columns, the embedding " + std::to_string(dim_));
  return backward(std::span<const float>{grads.data(), static_cast<size_t>(grads.size())}, step);
}

caf::expected<lookup_result> dynamic_embedding_lookup(session& s, std::vector<std::string> keys,
                                                      const de_config& config,
                                                      const std::string& name) {
  auto master = service_with(s, config, name);
  if (!master)
    return std::move(master.error());
  auto rows = runtime::ask<std::vector<float>>(s.system(), *master, s.timeout(),
                                               lookup_atom::value, name, keys);
  if (!rows)
    return std::move(rows.error());
  size_t dim = config.dim;
  if (rows->size() != keys.size() * dim)
    return make_error(errc::dimension_mismatch, "the service answered " +
                                                  std::to_string(rows->size()) + " values for " +
                                                  std::to_string(keys.size()) + " keys");
  lookup_result result;
  result.rows = to_matrix(std::move(*rows), keys.size(), dim);
  result.handle = lookup_handle{&s, name, std::move(keys), dim};
  return result;
}

caf::expected<sampled_logits_result>
sampled_logits(session& s, const std::vector<std::vector<std::string>>& positive_keys,
               const matrix& activations, uint32_t num_sampled, const de_config& config,
               const std::string& name, uint64_t seed) {
  auto batch = positive_keys.size();
  if (batch == 0)
    return make_error(errc::empty_batch, "sampled_logits needs at least one example");
  if (static_cast<size_t>(activations.rows()) != batch ||
      static_cast<size_t>(activations.cols()) != config.dim)
    return make_error(errc::dimension_mismatch,
                      "activations are " + std::to_string(activations.rows()) + "x" +
                        std::to_string(activations.cols()) + ", expected " +
                        std::to_string(batch) + "x" + std::to_string(config.dim));
  if (num_sampled == 0)
    return make_error(errc::invalid_argument, "sampled_logits needs num_sampled >= 1");
  size_t width = 0;
  std::set<std::string> unique_positives;
  for (size_t b = 0; b < batch; ++b) {
    if (positive_keys[b].empty())
      return make_error(errc::invalid_argument,
                        "example " + std::to_string(b) + " has no positive key");
    width = std::max(width, positive_keys[b].size());
    unique_positives.insert(positive_keys[b].begin(), positive_keys[b].end());
  }
  auto master = service_with(s, config, name);
  if (!master)
    return std::move(master.error());
  auto sampler = s.sampler();
  if (!sampler)
    return std::move(sampler.error());
  std::vector<std::string> positives{unique_positives.begin(), unique_positives.end()};
  auto drawn = runtime::ask<sample_result>(s.system(), *sampler, s.timeout(), sample_atom::value,
                                           name, positives, num_sampled, sampler_kind::unigram,
                                           seed);
  if (!drawn)
    return std::move(drawn.error());
  std::map<std::string, double> prob;
  sampled_logits_result result;
  for (size_t i = 0; i < drawn->keys.size(); ++i) {
    prob.emplace(drawn->keys[i], drawn->probs[i]);
    if (!drawn->is_positive[i])
      result.sampled_keys.push_back(drawn->keys[i]);
  }
  // Every column's key, in one lookup: the positives padded to `width`, then the negatives.
  auto columns = width + result.sampled_keys.size();
  std::vector<std::string> keys;
  keys.reserve(batch * columns);
  result.column_keys.resize(batch);
  for (size_t b = 0; b < batch; ++b) {
    auto& cols = result.column_keys[b];
    cols = positive_keys[b];
    cols.resize(width);
    cols.insert(cols.end(), result.sampled_keys.begin(), result.sampled_keys.end());
    for (auto& key : cols)
      if (!key.empty())
        keys.push_back(key);
  }
  auto rows = dynamic_embedding_lookup(s, keys, config, name);
  if (!rows)
    return std::move(rows.error());
  result.logits = matrix::Constant(static_cast<Eigen::Index>(batch),
                                   static_cast<Eigen::Index>(columns), masked_logit);
  result.labels = matrix::Zero(static_cast<Eigen::Index>(batch),
                               static_cast<Eigen::Index>(columns));
  result.row_of.assign(batch * columns, -1);
  int64_t next_row = 0;
  for (size_t b = 0; b < batch; ++b) {
    auto& cols = result.column_keys[b];
    std::set<std::string> own{positive_keys[b].begin(), positive_keys[b].end()};
    auto share = 1.0f / static_cast<float>(positive_keys[b].size());
    for (size_t c = 0; c < columns; ++c) {
      if (cols[c].empty())
        continue;
      auto row = next_row++;
      bool is_true = c < width;
      if (!is_true && own.count(cols[c]) > 0) {
        cols[c].clear(); // an accidental hit: masked like padding
        continue;
      }
      result.row_of[b * columns + c] = row;
      auto expected_count = static_cast<double>(num_sampled) * prob.at(cols[c]);
      auto bi = static_cast<Eigen::Index>(b);
      auto ci = static_cast<Eigen::Index>(c);
      result.logits(bi, ci) = activations.row(bi).dot(rows->rows.row(row)) -
                              static_cast<float>(std::log(expected_count));
      if (is_true)
        result.labels(bi, ci) = share;
    }
  }
  result.activations = activations;
  result.rows = std::move(rows->rows);
  result.handle = std::move(rows->handle);
  return result;
}

caf::expected<matrix> sampled_logits_result::backward(const matrix& dlogits, int64_t step) const {
  if (dlogits.rows() != logits.rows() || dlogits.cols() != logits.cols())
    return make_error(errc::dimension_mismatch, "dlogits do not have the shape of the logits");
  auto columns = static_cast<size_t>(logits.cols());
  matrix dact = matrix::Zero(activations.rows(), activations.cols());
  matrix grads = matrix::Zero(rows.rows(), rows.cols());
  for (size_t b = 0; b < column_keys.size(); ++b)
    for (size_t c = 0; c < columns; ++c) {
      auto row = row_of[b * columns + c];
      if (row < 0)
        continue;
      auto bi = static_cast<Eigen::Index>(b);
      auto g = dlogits(bi, static_cast<Eigen::Index>(c));
      grads.row(row) += g * activations.row(bi);
      dact.row(bi) += g * rows.row(row);
    }
  if (auto err = handle.backward(grads, step))
    return err;
  return dact;
}

caf::expected<top_k_result> top_k(session& s, const matrix& activations, uint32_t k,
                                  const de_config& config, const std::string& name) {
  auto master = service_with(s, config, name);
  if (!master)
    return std::move(master.error());
  std::vector<float> queries(activations.data(), activations.data() + activations.size());
  return runtime::ask<top_k_result>(s.system(), *master, s.timeout(), top_k_atom::value, name,
                                    std::move(queries), k, false);
}

caf::error save(session& s, const std::string& path, const training_state& state) {
  auto master = s.embeddings();
  if (!master)
    return std::move(master.error());
  std::vector<char> extra;
  caf::binary_serializer sink{s.system(), extra};
  auto copy = state;
  if (auto err = sink(copy.step, copy.input_position, copy.dense))
    return err;
  auto manifest = runtime::ask<checkpoint_manifest>(s.system(), *master, s.timeout(),
                                                    save_atom::value, path, state.step,
                                                    std::string{extra.begin(), extra.end()});
  return manifest ? caf::error{} : std::move(manifest.error());
}

caf::expected<restored_checkpoint> restore(session& s, const std::string& path) {
  auto master = s.embeddings();
  if (!master)
    return std::move(master.error());
  auto manifest = runtime::ask<checkpoint_manifest>(s.system(), *master, s.timeout(),
                                                    restore_atom::value, path);
  if (!manifest)
    return std::move(manifest.error());
  restored_checkpoint result;
  for (auto& entry : manifest->embeddings)
    result.embeddings.push_back(entry.config);
  if (manifest->extra.empty())
    return result;
  std::vector<char> extra{manifest->extra.begin(), manifest->extra.end()};
  caf::binary_deserializer source{s.system(), extra};
  auto& state = result.state;
  if (auto err = source(state.step, state.input_position, state.dense))
    return make_error(errc::corrupt_file, "the checkpoint's training state: " + render(err));
  return result;
}

} // namespace darcy::ops
