// DLRM's dot interaction (Naumov et al., 2019): of an example's dense vector z0 (the bottom
// MLP's output) and its F embeddings z1 … zF, all of width d, the output is z0 followed by
// every pairwise dot product zi · zj for j < i, in the order (1,0), (2,0), (2,1), (3,0), …
#pragma once

#include <cstddef>

#include "compute/nn/tensor.hpp"

namespace darcy::compute::nn {

/// The output width for F embeddings of width d: d + (F + 1) F / 2.
inline Eigen::Index dot_interaction_width(Eigen::Index embeddings, Eigen::Index dim) {
  return dim + (embeddings + 1) * embeddings / 2;
}

/// [dense, dots] for `dense` (batch × d) and `sparse` (batch × F·d, the embeddings side by
/// side). Precondition: same rows, sparse.cols() a multiple of dense.cols() > 0.
template <class T>
matrix_t<T> dot_interaction(const matrix_t<T>& dense, const matrix_t<T>& sparse);

/// The gradients of dense and sparse for dL/d(output) = `dy` of dot_interaction(dense,
/// sparse), written to `ddense` and `dsparse` (resized).
template <class T>
void dot_interaction_backward(const matrix_t<T>& dy, const matrix_t<T>& dense,
                              const matrix_t<T>& sparse, matrix_t<T>& ddense, matrix_t<T>& dsparse);

} // namespace darcy::compute::nn
