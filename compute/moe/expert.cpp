#include "compute/moe/expert.hpp"

#include "compute/nn/gemm.hpp"
#include "compute/nn/init.hpp"

namespace darcy::compute::moe {

namespace {

std::mt19937_64 expert_rng(const moe_config& cfg, uint32_t index) {
  return std::mt19937_64{cfg.gating.seed * 0x9E3779B97F4A7C15ull + index + 1};
}

} // namespace

template <class T>
expert<T>::expert(const moe_config& cfg, uint32_t index) : ffn_(cfg.expert == expert_kind::ffn) {
  auto rng = expert_rng(cfg, index);
  w1_ = parameter<T>{"weights", nn::glorot_uniform<T>(cfg.dim, ffn_ ? cfg.hidden : cfg.dim, rng)};
  if (ffn_) {
    b1_ = parameter<T>{"bias", matrix::Zero(1, cfg.hidden)};
    w2_ = parameter<T>{"weights_out", nn::glorot_uniform<T>(cfg.hidden, cfg.dim, rng)};
    b2_ = parameter<T>{"bias_out", matrix::Zero(1, cfg.dim)};
  }
}

template <class T>
void expert<T>::forward(const in_ref& in, out_ref hidden, out_ref out) const {
  if (!ffn_) {
    nn::gemm<T>(in, false, w1_.value, false, out, T{0});
    return;
  }
  nn::gemm<T>(in, false, w1_.value, false, hidden, T{0});
  hidden.rowwise() += b1_.value.row(0);
  hidden = hidden.cwiseMax(T{0});
  nn::gemm<T>(hidden, false, w2_.value, false, out, T{0});
  out.rowwise() += b2_.value.row(0);
}

template <class T>
void expert<T>::backward(const in_ref& in, const in_ref& hidden, const in_ref& dout, out_ref din) {
  if (!ffn_) {
    nn::gemm<T>(in, true, dout, false, w1_.grad, T{1});
    nn::gemm<T>(dout, false, w1_.value, true, din, T{0});
    return;
  }
  nn::gemm<T>(hidden, true, dout, false, w2_.grad, T{1});
  b2_.grad += dout.colwise().sum();
  matrix dh(dout.rows(), hidden.cols());
  nn::gemm<T>(dout, false, w2_.value, true, dh, T{0});
  dh = (hidden.array() > T{0}).select(dh, T{0});
  nn::gemm<T>(in, true, dh, false, w1_.grad, T{1});
  b1_.grad += dh.colwise().sum();
  nn::gemm<T>(dh, false, w1_.value, true, din, T{0});
}

template <class T>
parameter_list<T> expert<T>::parameters() {
  if (!ffn_)
    return {&w1_};
  return {&w1_, &b1_, &w2_, &b2_};
}

template class expert<float>;
template class expert<double>;

} // namespace darcy::compute::moe
