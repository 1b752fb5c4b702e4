// Configuration of one dynamic embedding (the seed's de_config) as plain serializable values:
// how rows start, which optimizer the shards run, which keys are admitted, which rows are
// evicted. Validation and math live in compute/ and stores/; this file only defines the values.
#pragma once

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

namespace darcy {

enum class init_kind : uint8_t { zeros = 0, uniform = 1, normal = 2, truncated_normal = 3 };

struct initializer_config {
  init_kind kind = init_kind::uniform;
  /// uniform: [low, high); normal and truncated_normal: mean and stddev.
  float low = -0.05f;
  float high = 0.05f;
  float mean = 0.0f;
  float stddev = 0.05f;
  uint64_t seed = 1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, initializer_config& x) {
  return f(caf::meta::type_name("initializer_config"), x.kind, x.low, x.high, x.mean, x.stddev,
           x.seed);
}

enum class optimizer_kind : uint8_t { sgd = 0, adagrad = 1, momentum = 2, adam = 3, ftrl = 4 };

struct optimizer_config {
  optimizer_kind kind = optimizer_kind::sgd;
  float learning_rate = 0.01f;
  /// Adagrad and FTRL: the accumulator's starting value.
  float initial_accumulator = 0.1f;
  /// Momentum.
  float momentum = 0.9f;
  bool nesterov = false;
  /// Adam.
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  /// FTRL-proximal (learning-rate power -0.5).
  float l1 = 0.0f;
  float l2 = 0.0f;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, optimizer_config& x) {
  return f(caf::meta::type_name("optimizer_config"), x.kind, x.learning_rate,
           x.initial_accumulator, x.momentum, x.nesterov, x.beta1, x.beta2, x.epsilon, x.l1, x.l2);
}

std::string to_string(init_kind x);
std::string to_string(optimizer_kind x);

} // namespace darcy
