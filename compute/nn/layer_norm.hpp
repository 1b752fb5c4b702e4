// Layer normalization over each row: y = gain ⊙ (x − mean) / sqrt(var + eps) + bias, with
// the gain starting at 1 and the bias at 0 (Ba et al., 2016).
#pragma once

#include "compute/nn/layer.hpp"

namespace darcy::compute::nn {

template <class T>
class layer_norm final : public layer<T> {
public:
  using matrix = matrix_t<T>;

  explicit layer_norm(Eigen::Index dim, T eps = T{1e-5});

  matrix forward(const matrix& x) override;
  matrix backward(const matrix& dy) override;
  parameter_list<T> parameters() override { return {&gain_, &bias_}; }

private:
  parameter<T> gain_;
  parameter<T> bias_;
  T eps_;
  matrix normalized_;
  Eigen::Matrix<T, Eigen::Dynamic, 1> inv_std_;
};

} // namespace darcy::compute::nn
