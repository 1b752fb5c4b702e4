// Seeded initializers for dense parameters: Glorot (Xavier) uniform for weights, and plain
// uniform and normal draws. The same seed gives the same values on every machine.
#pragma once

#include <random>

#include "compute/nn/tensor.hpp"

namespace darcy::compute::nn {

/// U(-a, a) with a = sqrt(6 / (fan_in + fan_out)), fan_in = rows, fan_out = cols.
template <class T>
matrix_t<T> glorot_uniform(Eigen::Index rows, Eigen::Index cols, std::mt19937_64& rng);

/// U(-scale, scale).
template <class T>
matrix_t<T> uniform(Eigen::Index rows, Eigen::Index cols, T scale, std::mt19937_64& rng);

/// N(0, stddev²).
template <class T>
matrix_t<T> normal(Eigen::Index rows, Eigen::Index cols, T stddev, std::mt19937_64& rng);

} // namespace darcy::compute::nn
