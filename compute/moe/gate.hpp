// The gating network of a sparsely-gated MoE layer: logits x·W_g (plus trainable noise for
// noisy top-k), a mask, and the renormalised gates G(x)_i = M_i·e^{H_i} / Σ_j M_j·e^{H_j},
// zero outside the mask. It also owns the auxiliary losses of gating_config (L_balance over G
// by default, as the paper's balancing losses; over G_σ with balance_input::softmax) and, for
// the batchwise mask, the per-expert thresholds that replace the mask at inference.
//
//   moe::gate<float> g{512, cfg, rng};
//   auto gates = g.forward(x);           // batch × n, k non-zero per row (top-k)
//   auto dx = g.backward(dloss_dgates);  // the auxiliary losses' gradients included
#pragma once

#include <random>
#include <vector>

#include "compute/nn/tensor.hpp"
#include "messages/errc.hpp"
#include "messages/moe/moe_config.hpp"

namespace darcy::compute::moe {

using nn::matrix_t;
using nn::parameter;
using nn::parameter_list;

/// errc::invalid_config naming the field: no experts, k of 0 or above the experts, a negative
/// or non-finite loss weight, a load loss without noisy gating, an input width of 0.
plain_error validate(const gating_config& cfg, uint32_t input_dim);

/// The standard normal draws ε (rows × experts) of noisy top-k gating at `step`: a function
/// of (cfg.seed, step) alone, so that another implementation of the layer can draw them too.
template <class T>
matrix_t<T> gate_noise(const gating_config& cfg, uint64_t step, Eigen::Index rows);

template <class T>
class gate {
public:
  using matrix = matrix_t<T>;

  /// W_g starts at zero, as in the paper (every expert equally likely); W_noise too.
  /// Precondition: validate(cfg, input_dim) passed.
  gate(uint32_t input_dim, const gating_config& cfg);

  /// The gates of a batch. In training, batchwise masks pick m = k·batch/n examples per
  /// expert; an example picked by none gets all-zero gates. At inference the thresholds do,
  /// and noise is off.
  matrix forward(const matrix& x);

  /// The weighted balancing losses of the last forward (0 when every weight is 0); backward
  /// adds their gradients.
  T aux_loss() const { return aux_loss_; }

  /// L_batchwise / batch of the last training forward of a batchwise gate, else 0. Its
  /// gradient reaches the thresholds only: the gates are constants to it.
  T threshold_loss() const { return threshold_loss_; }

  /// dL/dx for dL/dG = `dgates` plus aux_loss(); adds the parameters' gradients, and the
  /// thresholds' from threshold_loss().
  matrix backward(const matrix& dgates);

  /// Adds the gradient of threshold_loss() to the thresholds' (backward does it too): for a
  /// layer whose other gradients come from elsewhere.
  void add_threshold_grad();

  parameter_list<T> parameters();
  void set_training(bool training) { training_ = training; }
  /// The step whose noise the next forward draws.
  void set_step(uint64_t step) { step_ = step; }
  /// Threads of the gate's products.
  void set_threads(size_t threads) { threads_ = threads; }

  const matrix& mask() const { return mask_; }
  /// How often the threshold mask agreed with the batchwise mask in the last training forward.
  double threshold_agreement() const { return agreement_; }
  const gating_config& config() const { return cfg_; }

private:
  /// The gates L_balance takes: G or G_σ of the last forward.
  const matrix& balanced() const {
    return cfg_.balance_on == balance_input::softmax ? softmax_ : gates_;
  }
  T load_loss();
  void add_load_grad(matrix& dlogits, matrix& dstd) const;

  gating_config cfg_;
  parameter<T> w_gate_;
  parameter<T> w_noise_;
  parameter<T> thresholds_;
  bool training_ = true;
  uint64_t step_ = 0;
  size_t threads_ = 1;
  // The last forward.
  matrix x_, logits_, noise_raw_, noise_std_, eps_, h_, mask_, gates_, softmax_;
  matrix batchwise_;
  matrix load_z_, load_grad_;
  std::vector<Eigen::Index> load_excluding_;
  T aux_loss_ = 0;
  T threshold_loss_ = 0;
  double agreement_ = 1.0;
};

} // namespace darcy::compute::moe
