// One expert of an MoE layer, computing on blocks of rows in place: the slots of a dispatched
// batch that belong to it, with no copies in or out. Linear experts are y = x·W (d × d, no bias,
// as in the paper); FFN experts are y = relu(x·W1 + b1)·W2 + b2 (d → hidden → d). An expert owns
// its parameters, so the same object serves the in-process layer and an expert actor.
#pragma once

#include <random>

#include "compute/nn/tensor.hpp"
#include "messages/moe/moe_config.hpp"

namespace darcy::compute::moe {

using nn::matrix_t;
using nn::parameter;
using nn::parameter_list;

template <class T>
class expert {
public:
  using matrix = matrix_t<T>;
  using in_ref = Eigen::Ref<const matrix>;
  using out_ref = Eigen::Ref<matrix>;

  /// Expert `index` of a layer: Glorot-initialised weights drawn from (cfg.gating.seed, index)
  /// alone, so an expert actor starts equal to the same expert in process; zero biases.
  /// Precondition: validate(cfg) passed.
  expert(const moe_config& cfg, uint32_t index);

  /// out = E(in). `hidden` receives the FFN's activations (rows × hidden_width()), which
  /// backward needs; linear experts leave it alone (it may be empty).
  void forward(const in_ref& in, out_ref hidden, out_ref out) const;

  /// Writes dL/din for dL/dout and adds the parameters' gradients. `in` and `hidden` are those
  /// of the forward.
  void backward(const in_ref& in, const in_ref& hidden, const in_ref& dout, out_ref din);

  parameter_list<T> parameters();
  /// Width of the FFN's hidden layer; 0 for linear experts.
  Eigen::Index hidden_width() const { return ffn_ ? w1_.value.cols() : 0; }

private:
  bool ffn_;
  parameter<T> w1_; // linear: the only weights
  parameter<T> b1_;
  parameter<T> w2_;
  parameter<T> b2_;
};

} // namespace darcy::compute::moe
