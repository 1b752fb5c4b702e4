// Batch normalization over each column of a batch (Ioffe & Szegedy, 2015): in training the
// batch's own mean and variance normalise it, at inference the moving averages that training
// kept. y = gain ⊙ (x − mean) / sqrt(var + eps) + bias, the variance biased (over the rows).
#pragma once

#include "compute/nn/tensor.hpp"

namespace darcy::compute::nn {

/// What a training forward keeps for its backward.
template <class T>
struct batch_norm_cache {
  matrix_t<T> normalized;
  /// 1 / sqrt(var + eps) of each column, 1 × columns.
  matrix_t<T> inv_std;
};

/// The batch normalised by its own statistics, which go to `mean` and `var` (1 × columns).
/// Precondition: gain and bias are 1 × x.cols(); x has at least one row.
template <class T>
matrix_t<T> batch_norm_train(const matrix_t<T>& x, const matrix_t<T>& gain, const matrix_t<T>& bias,
                             T eps, batch_norm_cache<T>& cache, matrix_t<T>& mean,
                             matrix_t<T>& var);

/// The batch normalised by given statistics (the moving averages), each 1 × x.cols().
template <class T>
matrix_t<T> batch_norm_infer(const matrix_t<T>& x, const matrix_t<T>& gain, const matrix_t<T>& bias,
                             const matrix_t<T>& mean, const matrix_t<T>& var, T eps);

/// dL/dx of a training forward for dL/dy = `dy`; adds dL/dgain and dL/dbias to `dgain` and
/// `dbias`. The batch's statistics depend on x, and the gradient counts that.
template <class T>
matrix_t<T> batch_norm_backward(const matrix_t<T>& dy, const matrix_t<T>& gain,
                                const batch_norm_cache<T>& cache, matrix_t<T>& dgain,
                                matrix_t<T>& dbias);

} // namespace darcy::compute::nn
