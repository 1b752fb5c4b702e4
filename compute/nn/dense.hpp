// The affine layer y = x·W + b (W: in × out, b: 1 × out), with Glorot-initialised weights and
// zero bias.
#pragma once

#include <random>

#include "compute/nn/layer.hpp"

namespace darcy::compute::nn {

template <class T>
class dense final : public layer<T> {
public:
  using matrix = matrix_t<T>;

  dense(Eigen::Index in, Eigen::Index out, std::mt19937_64& rng, bool bias = true);

  matrix forward(const matrix& x) override;
  matrix backward(const matrix& dy) override;
  parameter_list<T> parameters() override;
  void set_threads(size_t threads) override { threads_ = threads; }

  Eigen::Index in() const { return weights_.value.rows(); }
  Eigen::Index out() const { return weights_.value.cols(); }
  parameter<T>& weights() { return weights_; }
  parameter<T>& bias() { return bias_; }

private:
  parameter<T> weights_;
  parameter<T> bias_;
  bool has_bias_;
  size_t threads_ = 1;
  matrix x_;
};

} // namespace darcy::compute::nn
