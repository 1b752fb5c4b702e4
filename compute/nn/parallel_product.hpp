// c = op(a)·op(b) (or c += ...) on several threads: each thread computes its own block of c's
// rows, or of its columns when c is wider than tall, through nn::gemm, so threads never write
// the same value. The blocks depend only on c's shape and the thread count: results are
// deterministic.
#pragma once

#include <cstddef>

#include "compute/nn/gemm.hpp"
#include "compute/parallel.hpp"

namespace darcy::compute::nn {

/// Products smaller than this many multiply-adds run on the calling thread.
inline constexpr double parallel_product_min_work = 1 << 20;

/// Precondition: c has the product's shape.
template <class T>
void parallel_product(const matrix_t<T>& a, bool trans_a, const matrix_t<T>& b, bool trans_b,
                      matrix_t<T>& c, bool accumulate, size_t threads) {
  auto rows = c.rows();
  auto cols = c.cols();
  auto inner = trans_a ? a.rows() : a.cols();
  auto beta = accumulate ? T{1} : T{0};
  auto work = static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(inner);
  if (threads <= 1 || work < parallel_product_min_work) {
    gemm<T>(a, trans_a, b, trans_b, c, beta);
    return;
  }
  auto by_rows = rows >= cols;
  parallel_ranges(
    static_cast<size_t>(by_rows ? rows : cols), threads, [&](size_t, size_t begin, size_t end) {
      auto n = static_cast<Eigen::Index>(end - begin);
      auto first = static_cast<Eigen::Index>(begin);
      if (by_rows) {
        // Rows of op(a): rows of a, or columns of a transposed.
        if (trans_a)
          gemm<T>(a.middleCols(first, n), true, b, trans_b, c.middleRows(first, n), beta);
        else
          gemm<T>(a.middleRows(first, n), false, b, trans_b, c.middleRows(first, n), beta);
      } else {
        // Columns of op(b): columns of b, or rows of b transposed.
        if (trans_b)
          gemm<T>(a, trans_a, b.middleRows(first, n), true, c.middleCols(first, n), beta);
        else
          gemm<T>(a, trans_a, b.middleCols(first, n), false, c.middleCols(first, n), beta);
      }
    });
}

} // namespace darcy::compute::nn
