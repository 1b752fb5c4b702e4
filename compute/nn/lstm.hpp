// A long short-term memory layer with its time loop (Hochreiter & Schmidhuber; the gate
// layout of Zaremba et al.): for each step t, with a = x_t·W + h_{t−1}·U + b split into the
// input, forget, cell and output gates, c_t = f ⊙ c_{t−1} + i ⊙ g and h_t = o ⊙ tanh(c_t).
// The forget gate's bias starts at 1. Backward runs through time over the steps of the last
// forward; the state it started from is treated as a constant (truncated backpropagation).
//
//   nn::lstm<float> cell{128, 256, rng};
//   auto hs = cell.forward(xs, state);   // xs: steps of batch × 128; hs: batch × 256 each
//   state = cell.final_state();          // carried into the next window
//   auto dxs = cell.backward(dhs);
#pragma once

#include <random>
#include <vector>

#include "compute/nn/tensor.hpp"

namespace darcy::compute::nn {

template <class T>
struct lstm_state {
  matrix_t<T> h;
  matrix_t<T> c;
};

template <class T>
class lstm {
public:
  using matrix = matrix_t<T>;
  using sequence = std::vector<matrix>;

  lstm(Eigen::Index in, Eigen::Index hidden, std::mt19937_64& rng);

  /// The outputs h_t of each step. `initial` is the state before the first step (zeros when
  /// empty). Preconditions: every x_t has the same rows and in() columns; `initial`, when
  /// given, has those rows and hidden() columns.
  sequence forward(const sequence& xs, const lstm_state<T>& initial = {});

  /// dL/dx_t for dL/dh_t = dhs[t] of the last forward; adds the parameters' gradients.
  sequence backward(const sequence& dhs);

  /// The state after the last step of the last forward.
  lstm_state<T> final_state() const;

  parameter_list<T> parameters() { return {&w_, &u_, &b_}; }
  Eigen::Index in() const { return w_.value.rows(); }
  Eigen::Index hidden() const { return u_.value.rows(); }

private:
  parameter<T> w_; // in × 4h
  parameter<T> u_; // h × 4h
  parameter<T> b_; // 1 × 4h
  sequence xs_;
  sequence hs_;    // h_{t−1} for step t: hs_[0] is the initial state
  sequence cs_;    // likewise for c
  sequence gates_; // activated [i f g o] of each step
};

} // namespace darcy::compute::nn
