#include "compute/nn/gemm.hpp"

#include <dlfcn.h>

#include <mutex>

#ifdef DARCY_HAVE_BLAS
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const float* alpha, const float* a, const int* lda,
                       const float* b, const int* ldb, const float* beta, float* c, const int* ldc);
#endif

namespace darcy::compute::nn {

namespace {

template <class T>
void eigen_gemm(const const_ref<T>& a, bool trans_a, const const_ref<T>& b, bool trans_b,
                mutable_ref<T> c, T beta) {
  if (beta == T{0})
    c.setZero();
  else if (beta != T{1})
    c *= beta;
  if (!trans_a && !trans_b)
    c.noalias() += a * b;
  else if (trans_a && !trans_b)
    c.noalias() += a.transpose() * b;
  else if (!trans_a && trans_b)
    c.noalias() += a * b.transpose();
  else
    c.noalias() += a.transpose() * b.transpose();
}

#ifdef DARCY_HAVE_BLAS
/// OpenBLAS threads its own calls by default; Darcy's callers already split their work, so
/// each call runs on the caller's thread alone.
void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] {
    using setter = void (*)(int);
    if (auto set = reinterpret_cast<setter>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
      set(1);
  });
}
#endif

} // namespace

bool gemm_uses_blas() {
#ifdef DARCY_HAVE_BLAS
  return true;
#else
  return false;
#endif
}

template <>
void gemm<double>(const const_ref<double>& a, bool trans_a, const const_ref<double>& b,
                  bool trans_b, mutable_ref<double> c, double beta) {
  eigen_gemm<double>(a, trans_a, b, trans_b, c, beta);
}

// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, and a row-major matrix is its
// own transpose in column-major storage: so BLAS gets B first, then A, each with its own flag.
template <>
void gemm<float>(const const_ref<float>& a, bool trans_a, const const_ref<float>& b, bool trans_b,
                 mutable_ref<float> c, float beta) {
#ifdef DARCY_HAVE_BLAS
  int m = static_cast<int>(c.rows());
  int n = static_cast<int>(c.cols());
  int k = static_cast<int>(trans_a ? a.rows() : a.cols());
  if (m > 0 && n > 0 && k > 0 && a.innerStride() == 1 && b.innerStride() == 1 &&
      c.innerStride() == 1) {
    single_threaded_blas();
    int lda = static_cast<int>(std::max<Eigen::Index>(a.outerStride(), 1));
    int ldb = static_cast<int>(std::max<Eigen::Index>(b.outerStride(), 1));
    int ldc = static_cast<int>(std::max<Eigen::Index>(c.outerStride(), 1));
    char ta = trans_b ? 'T' : 'N';
    char tb = trans_a ? 'T' : 'N';
    float one = 1;
    sgemm_(&ta, &tb, &n, &m, &k, &one, b.data(), &ldb, a.data(), &lda, &beta, c.data(), &ldc);
    return;
  }
#endif
  eigen_gemm<float>(a, trans_a, b, trans_b, c, beta);
}

} // namespace darcy::compute::nn
