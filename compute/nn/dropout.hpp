// Inverted dropout: in training, each value is kept with probability 1 - rate and scaled by
// 1 / (1 - rate), so inference is the identity. The mask of a batch depends only on (seed,
// step, shape): forward passes of one step see the same mask, and set_step() moves on.
#pragma once

#include <cstdint>

#include "compute/nn/layer.hpp"

namespace darcy::compute::nn {

template <class T>
class dropout final : public layer<T> {
public:
  using matrix = matrix_t<T>;

  /// Precondition: 0 <= rate < 1.
  dropout(double rate, uint64_t seed) : rate_(rate), seed_(seed) {}

  matrix forward(const matrix& x) override;
  matrix backward(const matrix& dy) override;
  void set_training(bool training) override { training_ = training; }

  /// The step whose mask the next forward draws.
  void set_step(uint64_t step) { step_ = step; }

private:
  double rate_;
  uint64_t seed_;
  uint64_t step_ = 0;
  bool training_ = true;
  matrix mask_;
};

} // namespace darcy::compute::nn
