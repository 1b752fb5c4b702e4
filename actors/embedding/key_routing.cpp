#include "actors/embedding/key_routing.hpp"

#include <algorithm>

#include "compute/hash.hpp"
#include "compute/placement.hpp"
#include "messages/error.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::actors {

caf::expected<std::vector<uint32_t>> checked_dims(const std::vector<table_keys>& tables,
                                                  const config_finder& configs) {
  if (tables.empty())
    return make_error(errc::empty_batch, "a lookup names no table");
  std::vector<uint32_t> dims;
  for (auto& t : tables) {
    auto cfg = configs(t.name);
    if (!cfg)
      return std::move(cfg.error());
    if (auto err = stores::check_batch(**cfg, t.keys.size()))
      return err;
    dims.push_back((*cfg)->dim);
  }
  return dims;
}

caf::expected<std::vector<uint32_t>> checked_dims(const std::vector<table_keys>& tables,
                                                  const config_finder& configs,
                                                  const std::vector<std::span<float>>& out) {
  auto dims = checked_dims(tables, configs);
  if (!dims)
    return dims;
  if (out.size() != tables.size())
    return make_error(errc::dimension_mismatch, std::to_string(out.size()) + " row buffers for " +
                                                  std::to_string(tables.size()) + " tables");
  for (size_t t = 0; t < tables.size(); ++t)
    if (out[t].size() != tables[t].keys.size() * (*dims)[t])
      return make_error(errc::dimension_mismatch, std::to_string(out[t].size()) + " values for " +
                                                    std::to_string(tables[t].keys.size()) +
                                                    " rows of '" + tables[t].name + "' (dim " +
                                                    std::to_string((*dims)[t]) + ")");
  return dims;
}

caf::error check_routed_gradients(const routed_batch& batch,
                                  const std::vector<std::span<const float>>& grads,
                                  const config_finder& configs) {
  if (grads.size() != batch.tables())
    return make_error(errc::dimension_mismatch, std::to_string(grads.size()) +
                                                  " gradient buffers for " +
                                                  std::to_string(batch.tables()) + " tables");
  for (size_t t = 0; t < batch.tables(); ++t) {
    auto cfg = configs(batch.name(t));
    if (!cfg)
      return std::move(cfg.error());
    if (auto err = stores::check_gradients(**cfg, batch.keys(t), grads[t]))
      return err;
  }
  return {};
}

key_batch hash_keys(const std::vector<std::string>& keys) {
  size_t bytes = 0;
  for (auto& k : keys)
    bytes += k.size();
  key_batch batch;
  batch.reserve(keys.size(), bytes);
  for (auto& k : keys)
    batch.push_back(k, compute::hash_key(k));
  return batch;
}

routed_batch::routed_batch(const std::vector<table_keys>& tables, std::vector<uint32_t> dims,
                           size_t shard_count)
  : dims_(std::move(dims)),
    inputs_(tables.size()),
    parts_(shard_count, std::vector<table_keys>(tables.size())),
    by_shard_(shard_count, std::vector<std::vector<placed>>(tables.size())),
    counts_(shard_count, std::vector<uint32_t>(tables.size())) {
  std::vector<bool> used(shard_count);
  // Deduplication: an open-addressing set of input positions keyed by the carried hash.
  std::vector<uint32_t> seen;
  for (size_t t = 0; t < tables.size(); ++t) {
    auto& batch = tables[t].keys;
    inputs_[t] = batch.size();
    names_.push_back(tables[t].name);
    for (size_t s = 0; s < shard_count; ++s)
      parts_[s][t].name = tables[t].name;
    size_t capacity = 16;
    while (capacity < batch.size() * 2)
      capacity *= 2;
    seen.assign(capacity, UINT32_MAX);
    std::vector<placed> first(batch.size());
    for (size_t k = 0; k < batch.size(); ++k) {
      auto h = batch.hash(k);
      auto key = batch[k];
      auto i = h & (capacity - 1);
      while (seen[i] != UINT32_MAX && (batch.hash(seen[i]) != h || batch[seen[i]] != key))
        i = (i + 1) & (capacity - 1);
      auto s = compute::shard_of_hash(h, shard_count);
      uint32_t row;
      if (seen[i] == UINT32_MAX) {
        seen[i] = static_cast<uint32_t>(k);
        row = counts_[s][t]++;
        parts_[s][t].keys.push_back(key, h, batch.count(k));
        used[s] = true;
      } else {
        row = first[seen[i]].row;
        parts_[s][t].keys.add_count(row, batch.count(k));
      }
      first[k] = {static_cast<uint32_t>(k), row};
      by_shard_[s][t].push_back({static_cast<uint32_t>(k), row});
    }
  }
  for (size_t s = 0; s < shard_count; ++s)
    if (used[s])
      involved_.push_back(s);
}

caf::error routed_batch::scatter(size_t s, const std::vector<shared_floats>& rows,
                                 std::vector<std::vector<float>>& out) const {
  std::vector<std::span<float>> spans(out.begin(), out.end());
  return scatter(s, rows, spans);
}

caf::error routed_batch::scatter(size_t s, const std::vector<shared_floats>& rows,
                                 const std::vector<std::span<float>>& out) const {
  if (rows.size() != tables() || out.size() != tables())
    return make_error(errc::dimension_mismatch, "shard " + std::to_string(s) + " answered " +
                                                  std::to_string(rows.size()) + " tables of " +
                                                  std::to_string(tables()));
  for (size_t t = 0; t < tables(); ++t) {
    auto dim = dims_[t];
    auto values = rows[t].values();
    if (values.size() != size_t{counts_[s][t]} * dim || out[t].size() != inputs_[t] * dim)
      return make_error(errc::dimension_mismatch, "shard " + std::to_string(s) + " answered " +
                                                    std::to_string(values.size()) + " values for " +
                                                    std::to_string(counts_[s][t]) +
                                                    " rows of dim " + std::to_string(dim));
    auto* dst = out[t].data();
    for (auto [input, row] : by_shard_[s][t])
      std::copy_n(values.data() + size_t{row} * dim, dim, dst + size_t{input} * dim);
  }
  return {};
}

std::vector<shared_floats> routed_batch::gather(
  size_t s, const std::vector<std::span<const float>>& grads) const {
  std::vector<shared_floats> result;
  result.reserve(tables());
  for (size_t t = 0; t < tables(); ++t) {
    auto dim = dims_[t];
    std::vector<float> sums(size_t{counts_[s][t]} * dim);
    // Rows are numbered in order of first sight: a row's first placement copies, later ones add.
    uint32_t seen = 0;
    for (auto [input, row] : by_shard_[s][t]) {
      auto* dst = sums.data() + size_t{row} * dim;
      auto* src = grads[t].data() + size_t{input} * dim;
      if (row == seen) {
        std::copy_n(src, dim, dst);
        ++seen;
        continue;
      }
      for (size_t d = 0; d < dim; ++d)
        dst[d] += src[d];
    }
    result.emplace_back(std::move(sums));
  }
  return result;
}

} // namespace darcy::actors
