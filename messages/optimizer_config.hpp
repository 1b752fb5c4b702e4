// An optimizer's kind and hyperparameters as plain serializable values, shared by the services
// that train: the embedding shards (per row) and the Estimator's parameter servers, experts and
// routers (per dense variable). The update rules live in compute/optimizer.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace darcy {

enum class optimizer_kind : uint8_t { sgd = 0, adagrad = 1, momentum = 2, adam = 3, ftrl = 4 };

/// A parameter of an update rule (compute/rules) by name, as a table's config gives it.
struct rule_value {
  std::string name;
  float value = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rule_value& x) {
  return f(x.name, x.value);
}

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
  /// The embedding shards' update rule by its registered name (compute/rules), with `params`
  /// as its parameters; empty: the rule of `kind`, whose parameters are the fields above. The
  /// dense variables of the Estimator take `kind` only.
  std::string rule;
  std::vector<rule_value> params;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, optimizer_config& x) {
  return f(x.kind, x.learning_rate, x.initial_accumulator, x.momentum, x.nesterov, x.beta1, x.beta2,
           x.epsilon, x.l1, x.l2, x.rule, x.params);
}

/// The learning rate of dense variables by global step, as in DLRM's reference run: a linear
/// warmup over the first `warmup_steps`, the configured rate, then from step `decay_start` a
/// polynomial decay of power `decay_power` that reaches 0 after `decay_steps`. All zero: the
/// configured rate throughout.
struct learning_rate_schedule {
  uint64_t warmup_steps = 0;
  uint64_t decay_start = 0;
  uint64_t decay_steps = 0;
  float decay_power = 2.0f;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, learning_rate_schedule& x) {
  return f(x.warmup_steps, x.decay_start, x.decay_steps, x.decay_power);
}

/// "sgd", "adagrad", "momentum", "adam" or "ftrl": also the name of the kind's update rule
/// (compute/rules), which is why it is defined here, where compute/ can call it.
inline std::string to_string(optimizer_kind x) {
  static constexpr const char* names[] = {"sgd", "adagrad", "momentum", "adam", "ftrl"};
  auto i = static_cast<size_t>(x);
  return i < std::size(names) ? names[i] : "unknown";
}

/// The kind to_string() names `name`; nullopt for any other name.
inline std::optional<optimizer_kind> optimizer_kind_named(const std::string& name) {
  for (uint8_t k = 0; k <= static_cast<uint8_t>(optimizer_kind::ftrl); ++k)
    if (to_string(static_cast<optimizer_kind>(k)) == name)
      return static_cast<optimizer_kind>(k);
  return std::nullopt;
}

} // namespace darcy
