// Requests for tests of the embedding service's paths (master, direct, shard client): the
// same tables and the same random multi-table batches, so that paths compare bit for bit.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "compute/hash.hpp"
#include "messages/embedding/embedding_interfaces.hpp"

namespace darcy::test {

/// A table of `dim` values, rows drawn uniformly in [-1, 1], trained by SGD at 0.5.
inline de_config uniform_sgd_table(uint32_t dim) {
  de_config cfg;
  cfg.dim = dim;
  cfg.init.kind = init_kind::uniform;
  cfg.init.low = -1;
  cfg.init.high = 1;
  cfg.optimizer.kind = optimizer_kind::sgd;
  cfg.optimizer.learning_rate = 0.5f;
  return cfg;
}

/// Embedding `name` of `dim` values trained by Adagrad at 0.1, at most 64 keys a batch.
inline de_config adagrad_table(const std::string& name, uint32_t dim) {
  de_config cfg;
  cfg.name = name;
  cfg.dim = dim;
  cfg.optimizer = {optimizer_kind::adagrad, 0.1f};
  cfg.max_batch = 64;
  return cfg;
}

/// 20 keys of tables "in" and "out" each, drawn from 41 with repeats, the empty key first.
inline std::vector<table_keys> two_table_request(std::mt19937& rng) {
  std::uniform_int_distribution<int> pick{0, 40};
  std::vector<table_keys> tables{{"in", {}}, {"out", {}}};
  for (auto& t : tables)
    for (int k = 0; k < 20; ++k) {
      auto key = k == 0 ? std::string{} : "k" + std::to_string(pick(rng));
      t.keys.push_back(key, compute::hash_key(key));
    }
  return tables;
}

/// Gradients for a two_table_request: 20 x 4 and 20 x 2 values drawn from N(0, 1).
inline std::vector<std::vector<float>> two_table_gradients(std::mt19937& rng) {
  std::normal_distribution<float> noise{0, 1};
  std::vector<std::vector<float>> grads{std::vector<float>(20 * 4), std::vector<float>(20 * 2)};
  for (auto& g : grads)
    for (auto& x : g)
      x = noise(rng);
  return grads;
}

} // namespace darcy::test
