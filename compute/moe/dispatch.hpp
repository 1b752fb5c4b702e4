// Moving examples to experts and back: a plan lists, expert by expert, the examples a gate
// matrix sends there; dispatch gathers their rows into one contiguous block per expert (so an
// expert's work is one GEMM), and combine adds each expert's output back, weighted by the gate.
// Both have their backward.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compute/nn/tensor.hpp"

namespace darcy::compute::moe {

using nn::matrix_t;

/// Expert e's slots are [offsets[e], offsets[e + 1]); slot s holds example rows[s] with
/// weight gates[s]. Within an expert, examples keep their batch order. The inverse: example
/// r's slots are row_slots[row_offsets[r] .. row_offsets[r + 1]).
struct dispatch_plan {
  std::vector<uint32_t> offsets;
  std::vector<uint32_t> rows;
  std::vector<double> gates;
  std::vector<uint32_t> row_offsets;
  std::vector<uint32_t> row_slots;
  uint32_t batch = 0;

  uint32_t experts() const {
    return offsets.empty() ? 0 : static_cast<uint32_t>(offsets.size() - 1);
  }
  uint32_t slots() const { return static_cast<uint32_t>(rows.size()); }
  uint32_t expert_batch(uint32_t e) const { return offsets[e + 1] - offsets[e]; }
};

/// The plan of a batch × n gate matrix: every non-zero gate is a slot.
template <class T>
dispatch_plan make_plan(const matrix_t<T>& gates);

/// slots × d: row s is x.row(rows[s]).
template <class T>
matrix_t<T> dispatch(const matrix_t<T>& x, const dispatch_plan& plan, size_t threads = 1);

/// batch × d: dx of dispatch for dL/d(dispatched) = `d`, rows added back where they came from.
template <class T>
matrix_t<T> dispatch_backward(const matrix_t<T>& d, const dispatch_plan& plan, size_t threads = 1);

/// batch × d: y.row(rows[s]) += gates[s] · out.row(s).
template <class T>
matrix_t<T> combine(const matrix_t<T>& out, const dispatch_plan& plan, size_t threads = 1);

/// For dL/dy = dy: dL/dout (slots × d) and dL/dgates (batch × n, non-zero at the slots).
template <class T>
void combine_backward(const matrix_t<T>& dy, const matrix_t<T>& out, const dispatch_plan& plan,
                      matrix_t<T>& dout, matrix_t<T>& dgates, size_t threads = 1);

/// Splits the experts into `parts` contiguous ranges of about equal slot counts: part p takes
/// experts [bounds[p], bounds[p + 1]).
std::vector<uint32_t> balanced_expert_ranges(const dispatch_plan& plan, size_t parts);

} // namespace darcy::compute::moe
