// C = A·B (or C += A·B) on several threads: each thread computes its own block of C's rows, or
// of its columns when C is wider than tall, so threads never write the same value. The blocks
// depend only on C's shape and the thread count: results are deterministic.
#pragma once

#include <cstddef>

#include "compute/nn/tensor.hpp"
#include "compute/parallel.hpp"

namespace darcy::compute::nn {

/// Products smaller than this many multiply-adds run on the calling thread.
inline constexpr double parallel_product_min_work = 1 << 20;

/// Precondition: without `accumulate`, c already has the product's shape.
template <class T, class A, class B>
void parallel_product(const A& a, const B& b, matrix_t<T>& c, bool accumulate, size_t threads) {
  auto rows = c.rows();
  auto cols = c.cols();
  auto work = static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(a.cols());
  if (threads <= 1 || work < parallel_product_min_work) {
    if (accumulate)
      c.noalias() += a * b;
    else
      c.noalias() = a * b;
    return;
  }
  auto by_rows = rows >= cols;
  parallel_ranges(static_cast<size_t>(by_rows ? rows : cols), threads,
                  [&](size_t, size_t begin, size_t end) {
                    auto n = static_cast<Eigen::Index>(end - begin);
                    auto first = static_cast<Eigen::Index>(begin);
                    if (by_rows) {
                      auto block = c.middleRows(first, n);
                      if (accumulate)
                        block.noalias() += a.middleRows(first, n) * b;
                      else
                        block.noalias() = a.middleRows(first, n) * b;
                    } else {
                      auto block = c.middleCols(first, n);
                      if (accumulate)
                        block.noalias() += a * b.middleCols(first, n);
                      else
                        block.noalias() = a * b.middleCols(first, n);
                    }
                  });
}

} // namespace darcy::compute::nn
