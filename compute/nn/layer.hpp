// The interface of the feed-forward layers of compute/nn: forward over a batch keeps what
// backward needs; backward takes dL/dy of that batch, adds dL/dθ to each parameter's grad and
// returns dL/dx.
//
//   nn::dense<float> fc{64, 32, rng};
//   auto y = fc.forward(x);          // x: batch × 64
//   auto dx = fc.backward(dloss_dy); // adds to fc.parameters()[i]->grad
#pragma once

#include <cstddef>

#include "compute/nn/tensor.hpp"

namespace darcy::compute::nn {

template <class T>
class layer {
public:
  using matrix = matrix_t<T>;

  virtual ~layer() = default;

  /// y = f(x) for a batch, one example per row. Precondition: x.cols() is the layer's input
  /// width (callers validate dimensions where their input comes from users).
  virtual matrix forward(const matrix& x) = 0;

  /// dL/dx for dL/dy = `dy` of the last forward; adds the parameters' gradients. Precondition:
  /// forward ran, and dy has the shape of its output.
  virtual matrix backward(const matrix& dy) = 0;

  /// The trainable parameters, owned by the layer; none by default.
  virtual parameter_list<T> parameters() { return {}; }

  /// Layers that behave differently in training (dropout) switch here.
  virtual void set_training(bool) {}

  /// How many threads the layer's products may use (1 by default).
  virtual void set_threads(size_t) {}
};

} // namespace darcy::compute::nn
