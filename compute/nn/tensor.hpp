// The values of compute/nn: row-major matrices with one example per row, and trainable
// parameters that carry their gradient. Every layer is a template over the scalar type, built
// for float (training) and double (the finite-difference gradient checks).
#pragma once

#include <string>
#include <vector>

#include <Eigen/Core>

namespace darcy::compute::nn {

template <class T>
using matrix_t = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

using matrix = matrix_t<float>;

/// A trainable tensor and the gradient of the loss with respect to it, of the same shape.
/// Backward passes add to `grad`; an optimizer step applies it and sets it back to zero.
template <class T>
struct parameter {
  std::string name;
  matrix_t<T> value;
  matrix_t<T> grad;

  parameter() = default;
  parameter(std::string name, matrix_t<T> initial)
    : name(std::move(name)),
      value(std::move(initial)),
      grad(matrix_t<T>::Zero(value.rows(), value.cols())) {}

  void zero_grad() { grad.setZero(); }
};

template <class T>
using parameter_list = std::vector<parameter<T>*>;

/// Whether the parameter named `name` is a moving statistic (batch normalisation's averages):
/// the last component of its name starts with "moving_". Its `grad` is not a gradient but the
/// amount to subtract: every optimizer applies it as value -= grad, whatever its rule, so
/// that the same push moves it alike on a parameter server and in a local step.
inline bool is_moving_statistic(const std::string& name) {
  auto slash = name.rfind('/');
  return name.compare(slash == std::string::npos ? 0 : slash + 1, 7, "moving_") == 0;
}

} // namespace darcy::compute::nn
