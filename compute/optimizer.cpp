#include "compute/optimizer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "messages/errc.hpp"

namespace darcy::compute {

plain_error validate(const optimizer_config& cfg) {
  auto bad = [](const char* what) {
    return plain_error{errc::invalid_config, std::string{"optimizer: "} + what};
  };
  if (!(cfg.learning_rate > 0) || !std::isfinite(cfg.learning_rate))
    return bad("learning_rate must be a positive number");
  if (!(cfg.initial_accumulator >= 0))
    return bad("initial_accumulator must be >= 0");
  if (cfg.kind == optimizer_kind::ftrl && !(cfg.initial_accumulator > 0))
    return bad("ftrl needs initial_accumulator > 0");
  if (!(cfg.momentum >= 0))
    return bad("momentum must be >= 0");
  if (!(cfg.beta1 >= 0 && cfg.beta1 < 1) || !(cfg.beta2 >= 0 && cfg.beta2 < 1))
    return bad("beta1 and beta2 must be in [0, 1)");
  if (!(cfg.epsilon > 0))
    return bad("epsilon must be > 0");
  if (!(cfg.l1 >= 0) || !(cfg.l2 >= 0))
    return bad("l1 and l2 must be >= 0");
  return {};
}

plain_error validate(const learning_rate_schedule& s) {
  if (!(s.decay_power > 0) || !std::isfinite(s.decay_power))
    return {errc::invalid_config, "learning-rate schedule: decay_power must be a positive number"};
  if (s.decay_steps > 0 && s.decay_start < s.warmup_steps)
    return {errc::invalid_config,
            "learning-rate schedule: decay_start must not come before the warmup ends"};
  return {};
}

float scheduled_rate(float base, const learning_rate_schedule& s, uint64_t step) {
  if (step < s.warmup_steps)
    return base * static_cast<float>(step + 1) / static_cast<float>(s.warmup_steps);
  if (s.decay_steps == 0 || step < s.decay_start)
    return base;
  auto end = s.decay_start + s.decay_steps;
  if (step >= end)
    return 0.0f;
  auto left = static_cast<double>(end - step) / static_cast<double>(s.decay_steps);
  return static_cast<float>(base * std::pow(left, static_cast<double>(s.decay_power)));
}

size_t slot_count(const optimizer_config& cfg) {
  switch (cfg.kind) {
    case optimizer_kind::sgd:
      return 0;
    case optimizer_kind::adagrad:
    case optimizer_kind::momentum:
      return 1;
    case optimizer_kind::adam:
    case optimizer_kind::ftrl:
      return 2;
  }
  return 0;
}

void init_slots(const optimizer_config& cfg, std::span<float> slots) {
  for (auto& s : slots)
    s = 0;
  if (cfg.kind == optimizer_kind::adagrad || cfg.kind == optimizer_kind::ftrl) {
    auto dim = slots.size() / slot_count(cfg);
    for (size_t i = 0; i < dim; ++i)
      slots[i] = cfg.initial_accumulator;
  }
}

namespace {

float adam_rate_of(const optimizer_config& cfg, uint64_t step) {
  auto t = static_cast<double>(step);
  return static_cast<float>(cfg.learning_rate * std::sqrt(1.0 - std::pow(cfg.beta2, t)) /
                            (1.0 - std::pow(cfg.beta1, t)));
}

/// Adam's bias-corrected rate at a row's step. Rows of a few floats make two pow calls per
/// row cost more than the update itself, so each thread keeps the rates of steps seen so far
/// for its last few configs (the same values, computed once).
float adam_rate(const optimizer_config& cfg, uint64_t step) {
  constexpr uint64_t max_cached = uint64_t{1} << 16;
  struct rates {
    float learning_rate = 0, beta1 = 0, beta2 = 0;
    std::vector<float> by_step;
  };
  thread_local std::array<rates, 4> cache;
  thread_local size_t next = 0;
  if (step == 0 || step > max_cached)
    return adam_rate_of(cfg, step);
  auto same = [&](const rates& r) {
    return r.learning_rate == cfg.learning_rate && r.beta1 == cfg.beta1 && r.beta2 == cfg.beta2;
  };
  auto it = std::find_if(cache.begin(), cache.end(), same);
  if (it == cache.end()) {
    it = cache.begin() + static_cast<std::ptrdiff_t>(next);
    next = (next + 1) % cache.size();
    *it = {cfg.learning_rate, cfg.beta1, cfg.beta2, {}};
  }
  while (it->by_step.size() < step)
    it->by_step.push_back(adam_rate_of(cfg, it->by_step.size() + 1));
  return it->by_step[step - 1];
}

} // namespace

void apply_gradient(const optimizer_config& cfg, std::span<float> w, std::span<float> slots,
                    std::span<const float> g, uint64_t& step) {
  // Hyperparameters in locals: stores through the spans could alias `cfg`, which would keep the
  // loops from vectorizing.
  const auto dim = w.size();
  const float lr = cfg.learning_rate;
  const float momentum = cfg.momentum;
  const float beta1 = cfg.beta1, beta2 = cfg.beta2, epsilon = cfg.epsilon;
  const float l1 = cfg.l1, l2 = cfg.l2;
  float* __restrict wp = w.data();
  const float* __restrict gp = g.data();
  ++step;
  switch (cfg.kind) {
    case optimizer_kind::sgd:
      for (size_t i = 0; i < dim; ++i)
        wp[i] -= lr * gp[i];
      break;
    case optimizer_kind::adagrad: {
      float* __restrict acc = slots.data();
      for (size_t i = 0; i < dim; ++i) {
        acc[i] += gp[i] * gp[i];
        wp[i] -= lr * gp[i] / std::sqrt(acc[i]);
      }
      break;
    }
    case optimizer_kind::momentum: {
      float* __restrict accum = slots.data();
      for (size_t i = 0; i < dim; ++i) {
        accum[i] = momentum * accum[i] + gp[i];
        wp[i] -= cfg.nesterov ? lr * (gp[i] + momentum * accum[i]) : lr * accum[i];
      }
      break;
    }
    case optimizer_kind::adam: {
      float* __restrict m = slots.data();
      float* __restrict v = slots.data() + dim;
      const float lr_t = adam_rate(cfg, step);
      for (size_t i = 0; i < dim; ++i) {
        m[i] = beta1 * m[i] + (1 - beta1) * gp[i];
        v[i] = beta2 * v[i] + (1 - beta2) * gp[i] * gp[i];
        wp[i] -= lr_t * m[i] / (std::sqrt(v[i]) + epsilon);
      }
      break;
    }
    case optimizer_kind::ftrl: {
      float* __restrict accum = slots.data();
      float* __restrict linear = slots.data() + dim;
      for (size_t i = 0; i < dim; ++i) {
        float accum_new = accum[i] + gp[i] * gp[i];
        float sigma = (std::sqrt(accum_new) - std::sqrt(accum[i])) / lr;
        linear[i] += gp[i] - sigma * wp[i];
        float quadratic = std::sqrt(accum_new) / lr + 2 * l2;
        wp[i] =
          std::abs(linear[i]) > l1 ? (std::copysign(l1, linear[i]) - linear[i]) / quadratic : 0.0f;
        accum[i] = accum_new;
      }
      break;
    }
  }
}

} // namespace darcy::compute
