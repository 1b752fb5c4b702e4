#include "compute/rules/builtin_rules.hpp"

#include <array>
#include <cmath>
#include <string>

#include "compute/optimizer.hpp"
#include "compute/rules/rule_registry.hpp"

namespace darcy::compute {

namespace {

/// A float field of optimizer_config by name.
struct field {
  const char* name;
  float optimizer_config::*member;
};

/// The field of optimizer_config named `name` (any float field but nesterov).
float optimizer_config::*member_of(const std::string& name) {
  static constexpr std::array<field, 8> fields{{
    {"learning_rate", &optimizer_config::learning_rate},
    {"initial_accumulator", &optimizer_config::initial_accumulator},
    {"momentum", &optimizer_config::momentum},
    {"beta1", &optimizer_config::beta1},
    {"beta2", &optimizer_config::beta2},
    {"epsilon", &optimizer_config::epsilon},
    {"l1", &optimizer_config::l1},
    {"l2", &optimizer_config::l2},
  }};
  for (auto& f : fields)
    if (name == f.name)
      return f.member;
  return &optimizer_config::learning_rate;
}

/// A kind of optimizer_config as a rule: its parameters are the kind's fields, its update is
/// apply_gradient's.
class optimizer_rule final : public update_rule {
public:
  optimizer_rule(optimizer_kind kind, std::string name, std::vector<std::string> fields)
    : kind_(kind), name_(std::move(name)), fields_(std::move(fields)) {
    for (auto& f : fields_)
      members_.push_back(f == "nesterov" ? nullptr : member_of(f));
  }
  std::string_view name() const override { return name_; }
  std::vector<rule_slot> slots() const override {
    switch (kind_) {
      case optimizer_kind::sgd:
        return {};
      case optimizer_kind::adagrad:
        return {{"accumulator", slot_shape::per_value, 0, "initial_accumulator"}};
      case optimizer_kind::momentum:
        return {{"accumulator", slot_shape::per_value}};
      case optimizer_kind::adam:
        return {{"m", slot_shape::per_value}, {"v", slot_shape::per_value}};
      case optimizer_kind::ftrl:
        return {{"accumulator", slot_shape::per_value, 0, "initial_accumulator"},
                {"linear", slot_shape::per_value}};
    }
    return {};
  }
  std::vector<rule_param> params() const override {
    optimizer_config defaults;
    std::vector<rule_param> out;
    for (auto& f : fields_)
      out.push_back({f, f == "nesterov" ? 0.0f : defaults.*member_of(f)});
    return out;
  }
  plain_error check(std::span<const float> values) const override {
    for (size_t i = 0; i < fields_.size(); ++i)
      if (fields_[i] == "nesterov" && values[i] != 0 && values[i] != 1)
        return {errc::invalid_config, "optimizer: nesterov must be 0 or 1"};
    return validate(config_of(values));
  }
  void update(const rule_context& c, std::span<const row_update> rows) const override {
    auto cfg = config_of(c.params);
    auto slots = slot_count(cfg) * c.dim;
    for (auto& r : rows) {
      // apply_gradient counts the update itself.
      auto step = r.updates - 1;
      apply_gradient(cfg, {r.values, c.dim}, {r.slots, slots}, {r.grad, c.dim}, step);
    }
  }
  optimizer_config config_of(std::span<const float> values) const {
    optimizer_config cfg;
    cfg.kind = kind_;
    for (size_t i = 0; i < members_.size(); ++i) {
      if (members_[i])
        cfg.*members_[i] = values[i];
      else
        cfg.nesterov = values[i] != 0;
    }
    return cfg;
  }

private:
  optimizer_kind kind_;
  std::string name_;
  std::vector<std::string> fields_;
  /// Each field's member of optimizer_config; null for nesterov.
  std::vector<float optimizer_config::*> members_;
};

std::vector<std::string> fields_of(optimizer_kind kind) {
  switch (kind) {
    case optimizer_kind::sgd:
      return {"learning_rate"};
    case optimizer_kind::adagrad:
      return {"learning_rate", "initial_accumulator"};
    case optimizer_kind::momentum:
      return {"learning_rate", "momentum", "nesterov"};
    case optimizer_kind::adam:
      return {"learning_rate", "beta1", "beta2", "epsilon"};
    case optimizer_kind::ftrl:
      return {"learning_rate", "initial_accumulator", "l1", "l2"};
  }
  return {};
}

/// Every rule below takes learning_rate first.
plain_error check_rate(std::span<const float> v) {
  if (!(v[0] > 0))
    return {errc::invalid_config, "optimizer: learning_rate must be a positive number"};
  return {};
}

plain_error check_adagrad(std::span<const float> v) {
  if (auto err = check_rate(v))
    return err;
  if (!(v[1] > 0))
    return {errc::invalid_config, "optimizer: initial_accumulator must be > 0"};
  return {};
}

/// The squared L2 norm of a row's gradient.
float squared_norm(const float* __restrict g, size_t dim) {
  float squares = 0;
  for (size_t i = 0; i < dim; ++i)
    squares += g[i] * g[i];
  return squares;
}

/// Adagrad with one accumulator a row, as TorchRec's fused optimizer keeps it: the accumulator
/// starts at initial_accumulator (0) and grows by the mean of the squared gradient, and every
/// value of the row moves by learning_rate * g / (sqrt(accumulator) + epsilon).
class rowwise_adagrad final : public update_rule {
public:
  std::string_view name() const override { return "rowwise_adagrad"; }
  std::vector<rule_slot> slots() const override {
    return {{"accumulator", slot_shape::per_row, 0, "initial_accumulator"}};
  }
  std::vector<rule_param> params() const override {
    return {{"learning_rate", 0.01f}, {"initial_accumulator", 0.0f}, {"epsilon", 1e-8f}};
  }
  plain_error check(std::span<const float> v) const override {
    if (auto err = check_rate(v))
      return err;
    if (!(v[1] >= 0) || !(v[2] >= 0) || !(v[1] + v[2] > 0))
      return {errc::invalid_config,
              "optimizer: initial_accumulator and epsilon must be >= 0, and not both 0"};
    return {};
  }
  void update(const rule_context& c, std::span<const row_update> rows) const override {
    const float lr = c.params[0], epsilon = c.params[2];
    const auto dim = c.dim;
    for (auto& r : rows) {
      const float* __restrict g = r.grad;
      float* __restrict w = r.values;
      r.slots[0] += squared_norm(g, dim) / static_cast<float>(dim);
      const float rate = lr / (std::sqrt(r.slots[0]) + epsilon);
      for (size_t i = 0; i < dim; ++i)
        w[i] -= rate * g[i];
    }
  }
};

/// Adagrad on each row's gradient scaled down to an L2 norm of at most clip_norm.
class clipped_adagrad final : public update_rule {
public:
  std::string_view name() const override { return "clipped_adagrad"; }
  std::vector<rule_slot> slots() const override {
    return {{"accumulator", slot_shape::per_value, 0, "initial_accumulator"}};
  }
  std::vector<rule_param> params() const override {
    return {{"learning_rate", 0.01f}, {"initial_accumulator", 0.1f}, {"clip_norm", 1.0f}};
  }
  plain_error check(std::span<const float> v) const override {
    if (auto err = check_adagrad(v))
      return err;
    if (!(v[2] > 0))
      return {errc::invalid_config, "optimizer: clip_norm must be > 0"};
    return {};
  }
  void update(const rule_context& c, std::span<const row_update> rows) const override {
    const float lr = c.params[0], clip = c.params[2];
    const auto dim = c.dim;
    for (auto& r : rows) {
      const float* __restrict g = r.grad;
      float* __restrict w = r.values;
      float* __restrict acc = r.slots;
      const float norm = std::sqrt(squared_norm(g, dim));
      const float scale = norm > clip ? clip / norm : 1.0f;
      for (size_t i = 0; i < dim; ++i) {
        const float gi = scale * g[i];
        acc[i] += gi * gi;
        w[i] -= lr * gi / std::sqrt(acc[i]);
      }
    }
  }
};

} // namespace

std::shared_ptr<const update_rule> builtin_rule(optimizer_kind kind) {
  return std::make_shared<optimizer_rule>(kind, to_string(kind), fields_of(kind));
}

std::vector<float> builtin_params(const optimizer_config& cfg) {
  std::vector<float> out;
  for (auto& f : fields_of(cfg.kind))
    out.push_back(f == "nesterov" ? (cfg.nesterov ? 1.0f : 0.0f) : cfg.*member_of(f));
  return out;
}

void add_builtin_rules(rule_registry& registry) {
  for (auto kind : {optimizer_kind::sgd, optimizer_kind::adagrad, optimizer_kind::momentum,
                    optimizer_kind::adam, optimizer_kind::ftrl})
    registry.add(builtin_rule(kind));
  registry.add(std::make_shared<rowwise_adagrad>());
  registry.add(std::make_shared<clipped_adagrad>());
}

} // namespace darcy::compute
