#include "compute/nn/dense.hpp"

#include "compute/nn/init.hpp"

namespace darcy::compute::nn {

template <class T>
dense<T>::dense(Eigen::Index in, Eigen::Index out, std::mt19937_64& rng, bool bias)
  : weights_("weights", glorot_uniform<T>(in, out, rng)),
    bias_("bias", matrix::Zero(1, bias ? out : 0)), has_bias_(bias) {}

template <class T>
auto dense<T>::forward(const matrix& x) -> matrix {
  x_ = x;
  matrix y = x * weights_.value;
  if (has_bias_)
    y.rowwise() += bias_.value.row(0);
  return y;
}

template <class T>
auto dense<T>::backward(const matrix& dy) -> matrix {
  weights_.grad.noalias() += x_.transpose() * dy;
  if (has_bias_)
    bias_.grad += dy.colwise().sum();
  return dy * weights_.value.transpose();
}

template <class T>
parameter_list<T> dense<T>::parameters() {
  if (has_bias_)
    return {&weights_, &bias_};
  return {&weights_};
}

template class dense<float>;
template class dense<double>;

} // namespace darcy::compute::nn
