// Test rows around 32 topics with log-normal lengths, as trained factors and embeddings are:
// the items and queries of the MIPS index tests.
#pragma once

#include <cmath>
#include <random>

#include "compute/top_k.hpp"

namespace darcy::test {

/// `rows` rows of `dim` values; the topics are the same for every seed.
inline compute::row_matrix topic_items(Eigen::Index rows, Eigen::Index dim, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::mt19937_64 topic_rng{100};
  std::normal_distribution<float> gauss;
  compute::row_matrix topics(32, dim);
  for (Eigen::Index r = 0; r < topics.rows(); ++r)
    for (Eigen::Index c = 0; c < dim; ++c)
      topics(r, c) = gauss(topic_rng);
  compute::row_matrix m(rows, dim);
  for (Eigen::Index r = 0; r < rows; ++r) {
    for (Eigen::Index c = 0; c < dim; ++c)
      m(r, c) = gauss(rng);
    m.row(r) = (2 * topics.row(static_cast<Eigen::Index>(rng() % 32)) + m.row(r)) *
               std::exp(0.5f * gauss(rng));
  }
  return m;
}

} // namespace darcy::test
