#include "compute/nn/dense.hpp"

#include "compute/nn/init.hpp"
#include "compute/nn/parallel_product.hpp"

namespace darcy::compute::nn {

template <class T>
dense<T>::dense(Eigen::Index in, Eigen::Index out, std::mt19937_64& rng, bool bias)
  : weights_("weights", glorot_uniform<T>(in, out, rng)),
    bias_("bias", matrix::Zero(1, bias ? out : 0)),
    has_bias_(bias) {
}

template <class T>
auto dense<T>::forward(const matrix& x) -> matrix {
  x_ = x;
  matrix y(x.rows(), out());
  parallel_product<T>(x, false, weights_.value, false, y, false, threads_);
  if (has_bias_)
    y.rowwise() += bias_.value.row(0);
  return y;
}

template <class T>
auto dense<T>::backward(const matrix& dy) -> matrix {
  parallel_product<T>(x_, true, dy, false, weights_.grad, true, threads_);
  if (has_bias_)
    bias_.grad += dy.colwise().sum();
  matrix dx(dy.rows(), in());
  parallel_product<T>(dy, false, weights_.value, true, dx, false, threads_);
  return dx;
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
