// The rectifier y = max(x, 0), elementwise. Its gradient at exactly 0 is taken as 0.
#pragma once

#include "compute/nn/layer.hpp"

namespace darcy::compute::nn {

template <class T>
class relu final : public layer<T> {
public:
  using matrix = matrix_t<T>;

  matrix forward(const matrix& x) override;
  matrix backward(const matrix& dy) override;

private:
  matrix y_;
};

} // namespace darcy::compute::nn
