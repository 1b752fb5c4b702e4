// Seeded random matrices for the tests of compute/mips and of the indexes built from it.
#pragma once

#include <random>

#include "compute/top_k.hpp"

namespace darcy::test {

/// rows x cols standard normal values, the same for a seed.
inline compute::row_matrix gaussian_matrix(Eigen::Index rows, Eigen::Index cols, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::normal_distribution<float> gauss;
  compute::row_matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i)
    m.data()[i] = gauss(rng);
  return m;
}

} // namespace darcy::test
