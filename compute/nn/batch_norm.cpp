#include "compute/nn/batch_norm.hpp"

#include <cmath>

namespace darcy::compute::nn {

template <class T>
matrix_t<T> batch_norm_train(const matrix_t<T>& x, const matrix_t<T>& gain, const matrix_t<T>& bias,
                             T eps, batch_norm_cache<T>& cache, matrix_t<T>& mean,
                             matrix_t<T>& var) {
  auto n = static_cast<T>(x.rows());
  mean = x.colwise().sum() / n;
  matrix_t<T> centered = x.rowwise() - mean.row(0);
  var = centered.cwiseAbs2().colwise().sum() / n;
  cache.inv_std = (var.array() + eps).rsqrt().matrix();
  cache.normalized = centered.array().rowwise() * cache.inv_std.row(0).array();
  matrix_t<T> y = cache.normalized.array().rowwise() * gain.row(0).array();
  y.rowwise() += bias.row(0);
  return y;
}

template <class T>
matrix_t<T> batch_norm_infer(const matrix_t<T>& x, const matrix_t<T>& gain, const matrix_t<T>& bias,
                             const matrix_t<T>& mean, const matrix_t<T>& var, T eps) {
  matrix_t<T> scale = gain.array() * (var.array() + eps).rsqrt();
  matrix_t<T> y = (x.rowwise() - mean.row(0)).array().rowwise() * scale.row(0).array();
  y.rowwise() += bias.row(0);
  return y;
}

// With x̂ the normalised batch and g = dy ⊙ gain, per column over its n rows:
// dx = inv_std · (g − mean(g) − x̂ · mean(g ⊙ x̂)).
template <class T>
matrix_t<T> batch_norm_backward(const matrix_t<T>& dy, const matrix_t<T>& gain,
                                const batch_norm_cache<T>& cache, matrix_t<T>& dgain,
                                matrix_t<T>& dbias) {
  dgain += dy.cwiseProduct(cache.normalized).colwise().sum();
  dbias += dy.colwise().sum();
  auto n = static_cast<T>(dy.rows());
  matrix_t<T> g = dy.array().rowwise() * gain.row(0).array();
  matrix_t<T> mean_g = g.colwise().sum() / n;
  matrix_t<T> mean_gx = g.cwiseProduct(cache.normalized).colwise().sum() / n;
  matrix_t<T> dx = g.rowwise() - mean_g.row(0);
  dx -= (cache.normalized.array().rowwise() * mean_gx.row(0).array()).matrix();
  return dx.array().rowwise() * cache.inv_std.row(0).array();
}

#define DARCY_BATCH_NORM(T)                                                                        \
  template matrix_t<T> batch_norm_train(const matrix_t<T>&, const matrix_t<T>&,                    \
                                        const matrix_t<T>&, T, batch_norm_cache<T>&, matrix_t<T>&, \
                                        matrix_t<T>&);                                             \
  template matrix_t<T> batch_norm_infer(const matrix_t<T>&, const matrix_t<T>&,                    \
                                        const matrix_t<T>&, const matrix_t<T>&,                    \
                                        const matrix_t<T>&, T);                                    \
  template matrix_t<T> batch_norm_backward(const matrix_t<T>&, const matrix_t<T>&,                 \
                                           const batch_norm_cache<T>&, matrix_t<T>&,               \
                                           matrix_t<T>&);
DARCY_BATCH_NORM(float)
DARCY_BATCH_NORM(double)
#undef DARCY_BATCH_NORM

} // namespace darcy::compute::nn
