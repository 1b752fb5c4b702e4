// The paper's masks and auxiliary losses over a batch of gate values (one example per row, one
// expert per column), as pure functions: top-k per example, the batchwise mask (top m per
// expert), the threshold mask used at inference, L_balance, CV², and L_batchwise, which trains
// the thresholds to agree with the batchwise mask.
#pragma once

#include <cstdint>

#include "compute/nn/tensor.hpp"

namespace darcy::compute::moe {

using nn::matrix_t;

/// 1 at the k largest values of each row (ties to the lower column), else 0.
/// Precondition: 1 <= k <= values.cols().
template <class T>
matrix_t<T> top_k_mask(const matrix_t<T>& values, uint32_t k);

/// M_batchwise(X, m): 1 at the m largest values of each column (ties to the lower row), so
/// that every expert gets exactly m examples. Precondition: m <= values.rows().
template <class T>
matrix_t<T> batchwise_mask(const matrix_t<T>& values, uint32_t m);

/// m = k·batch/n, at least 1 and at most the batch.
uint32_t batchwise_m(uint32_t k, uint32_t batch, uint32_t experts);

/// M_threshold(x, T)_i = 1 when x_i > T_i. `thresholds` is 1 × n.
template <class T>
matrix_t<T> threshold_mask(const matrix_t<T>& values, const matrix_t<T>& thresholds);

/// The fraction of entries where two masks agree.
template <class T>
double mask_agreement(const matrix_t<T>& a, const matrix_t<T>& b);

/// A loss and its gradient with respect to the values it was computed from.
template <class T>
struct loss_and_grad {
  T value = 0;
  matrix_t<T> grad;
};

/// L_balance(X) = ½ Σ_i (mean_x gates(x)_i − 1/n)²; grad has the shape of gates.
template <class T>
loss_and_grad<T> balance_loss(const matrix_t<T>& gates);

/// CV² = variance / mean² of a 1 × n row (0 when the mean is 0); grad is 1 × n.
template <class T>
loss_and_grad<T> cv_squared(const matrix_t<T>& values);

/// L_batchwise(X, T, m) / |X| = Σ_x Σ_i (M_threshold(x, T)_i − M_batchwise(X, m)_{x,i})
/// (x_i − T_i) / |X|, with its gradient with respect to T (1 × n). The values are taken as
/// constants: this loss trains the thresholds only.
template <class T>
loss_and_grad<T> batchwise_threshold_loss(const matrix_t<T>& values, const matrix_t<T>& thresholds,
                                          const matrix_t<T>& batchwise);

} // namespace darcy::compute::moe
