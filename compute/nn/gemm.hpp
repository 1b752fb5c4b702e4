// The one matrix product of compute/nn and compute/moe: c = beta·c + op(a)·op(b) on row-major
// matrices or blocks of them. Float products run through the system BLAS (OpenBLAS, one thread
// per call: callers split work across their own threads) when Darcy was built with one; double
// products, and every product of a build without BLAS, run through Eigen.
#pragma once

#include "compute/nn/tensor.hpp"

namespace darcy::compute::nn {

template <class T>
using const_ref = Eigen::Ref<const matrix_t<T>>;

template <class T>
using mutable_ref = Eigen::Ref<matrix_t<T>>;

/// Precondition: c is rows(op(a)) × cols(op(b)), and cols(op(a)) == rows(op(b)).
template <class T>
void gemm(const const_ref<T>& a, bool trans_a, const const_ref<T>& b, bool trans_b,
          mutable_ref<T> c, T beta);

/// True when float products run through a BLAS library.
bool gemm_uses_blas();

} // namespace darcy::compute::nn
