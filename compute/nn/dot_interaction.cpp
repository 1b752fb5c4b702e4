#include "compute/nn/dot_interaction.hpp"

namespace darcy::compute::nn {

namespace {

/// Row r's vector i of width d: the dense one for i = 0, else embedding i − 1.
template <class T>
const T* vector_of(const matrix_t<T>& dense, const matrix_t<T>& sparse, Eigen::Index r,
                   Eigen::Index i, Eigen::Index d) {
  return i == 0 ? dense.data() + r * d : sparse.data() + r * sparse.cols() + (i - 1) * d;
}

template <class T>
T dot(const T* a, const T* b, Eigen::Index d) {
  T s = 0;
  for (Eigen::Index k = 0; k < d; ++k)
    s += a[k] * b[k];
  return s;
}

} // namespace

template <class T>
matrix_t<T> dot_interaction(const matrix_t<T>& dense, const matrix_t<T>& sparse) {
  auto d = dense.cols();
  auto f = sparse.cols() / d;
  matrix_t<T> out(dense.rows(), dot_interaction_width(f, d));
  out.leftCols(d) = dense;
  for (Eigen::Index r = 0; r < dense.rows(); ++r) {
    auto* o = out.data() + r * out.cols() + d;
    for (Eigen::Index i = 1; i <= f; ++i) {
      auto* zi = vector_of(dense, sparse, r, i, d);
      for (Eigen::Index j = 0; j < i; ++j)
        *o++ = dot(zi, vector_of(dense, sparse, r, j, d), d);
    }
  }
  return out;
}

// d(zi · zj) / dzi = zj: each pair's output gradient adds g · zj to zi's and g · zi to zj's.
template <class T>
void dot_interaction_backward(const matrix_t<T>& dy, const matrix_t<T>& dense,
                              const matrix_t<T>& sparse, matrix_t<T>& ddense,
                              matrix_t<T>& dsparse) {
  auto d = dense.cols();
  auto f = sparse.cols() / d;
  ddense = dy.leftCols(d);
  dsparse = matrix_t<T>::Zero(sparse.rows(), sparse.cols());
  auto grad_of = [&](Eigen::Index r, Eigen::Index i) {
    return i == 0 ? ddense.data() + r * d : dsparse.data() + r * sparse.cols() + (i - 1) * d;
  };
  for (Eigen::Index r = 0; r < dense.rows(); ++r) {
    auto* g = dy.data() + r * dy.cols() + d;
    for (Eigen::Index i = 1; i <= f; ++i) {
      auto* zi = vector_of(dense, sparse, r, i, d);
      auto* gi = grad_of(r, i);
      for (Eigen::Index j = 0; j < i; ++j, ++g) {
        auto* zj = vector_of(dense, sparse, r, j, d);
        auto* gj = grad_of(r, j);
        for (Eigen::Index k = 0; k < d; ++k) {
          gi[k] += *g * zj[k];
          gj[k] += *g * zi[k];
        }
      }
    }
  }
}

#define DARCY_DOT_INTERACTION(T)                                                 \
  template matrix_t<T> dot_interaction(const matrix_t<T>&, const matrix_t<T>&);  \
  template void dot_interaction_backward(const matrix_t<T>&, const matrix_t<T>&, \
                                         const matrix_t<T>&, matrix_t<T>&, matrix_t<T>&);
DARCY_DOT_INTERACTION(float)
DARCY_DOT_INTERACTION(double)
#undef DARCY_DOT_INTERACTION

} // namespace darcy::compute::nn
