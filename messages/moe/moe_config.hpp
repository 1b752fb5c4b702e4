// Configuration of a sparsely-gated mixture-of-experts layer as plain serializable values: how
// the gate masks and balances, and what each expert computes. Validation and math live in
// compute/moe; this file only defines the values.
#pragma once

#include <cstdint>
#include <string>

namespace darcy {

enum class mask_kind : uint8_t {
  /// The k largest gate logits of each example.
  top_k = 0,
  /// Top-k of the logits plus trainable Gaussian noise (the paper's noisy top-k gating).
  noisy_top_k = 1,
  /// The m = k·batch/n examples with the largest softmax gates of each expert: exactly
  /// balanced. Inference uses the learned per-expert thresholds instead.
  batchwise = 2,
};

std::string to_string(mask_kind x);

/// Which gates L_balance averages over the batch.
enum class balance_input : uint8_t {
  /// The sparse gates G(x) that weight the experts, as the paper's balancing losses take them
  /// (its Importance(X) = Σ_x G(x)); its gradient flows through the masked softmax.
  gates = 0,
  /// The dense softmax G_σ(x) over every expert, before the mask.
  softmax = 1,
};

std::string to_string(balance_input x);

struct gating_config {
  uint32_t experts = 4;
  /// Experts per example (top-k), or on average (batchwise).
  uint32_t k = 2;
  mask_kind mask = mask_kind::top_k;
  /// L_balance = w/2 · Σ_i (mean_x G(x)_i − 1/n)², over `balance_on`'s gates.
  double balance_weight = 0;
  balance_input balance_on = balance_input::gates;
  /// w · CV²(Σ_x G(x)), the paper's importance loss.
  double importance_weight = 0;
  /// w · CV²(Σ_x P(x, i)), the paper's smooth load loss; noisy_top_k only.
  double load_weight = 0;
  /// Seeds the gate's noise and initial weights.
  uint64_t seed = 1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gating_config& x) {
  return f(x.experts, x.k, x.mask, x.balance_weight, x.balance_on, x.importance_weight,
           x.load_weight, x.seed);
}

enum class expert_kind : uint8_t {
  /// y = x·W, d × d, as in the paper's language models.
  linear = 0,
  /// d → hidden → d with a ReLU between.
  ffn = 1,
};

std::string to_string(expert_kind x);

struct moe_config {
  uint32_t dim = 64;
  expert_kind expert = expert_kind::linear;
  /// Width of an ffn expert's hidden layer.
  uint32_t hidden = 128;
  gating_config gating;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, moe_config& x) {
  return f(x.dim, x.expert, x.hidden, x.gating);
}

} // namespace darcy
