#include "compute/nn/layer_norm.hpp"

#include <cmath>

namespace darcy::compute::nn {

template <class T>
layer_norm<T>::layer_norm(Eigen::Index dim, T eps)
  : gain_("gain", matrix::Ones(1, dim)), bias_("bias", matrix::Zero(1, dim)), eps_(eps) {
}

template <class T>
auto layer_norm<T>::forward(const matrix& x) -> matrix {
  auto n = static_cast<T>(x.cols());
  normalized_.resize(x.rows(), x.cols());
  inv_std_.resize(x.rows());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    auto mean = x.row(r).sum() / n;
    auto centered = (x.row(r).array() - mean).matrix();
    auto var = centered.squaredNorm() / n;
    inv_std_(r) = T{1} / std::sqrt(var + eps_);
    normalized_.row(r) = centered * inv_std_(r);
  }
  matrix y = normalized_.array().rowwise() * gain_.value.row(0).array();
  y.rowwise() += bias_.value.row(0);
  return y;
}

// With x̂ the normalized row and g = dy ⊙ gain: dx = inv_std · (g − mean(g) − x̂ · mean(g ⊙ x̂)).
template <class T>
auto layer_norm<T>::backward(const matrix& dy) -> matrix {
  gain_.grad += dy.cwiseProduct(normalized_).colwise().sum();
  bias_.grad += dy.colwise().sum();
  auto n = static_cast<T>(dy.cols());
  matrix g = dy.array().rowwise() * gain_.value.row(0).array();
  matrix dx(dy.rows(), dy.cols());
  for (Eigen::Index r = 0; r < dy.rows(); ++r) {
    auto mean_g = g.row(r).sum() / n;
    auto mean_gx = g.row(r).dot(normalized_.row(r)) / n;
    dx.row(r) = ((g.row(r).array() - mean_g) - normalized_.row(r).array() * mean_gx) * inv_std_(r);
  }
  return dx;
}

template class layer_norm<float>;
template class layer_norm<double>;

} // namespace darcy::compute::nn
