#include "compute/nn/init.hpp"

#include <cmath>

namespace darcy::compute::nn {

template <class T>
matrix_t<T> glorot_uniform(Eigen::Index rows, Eigen::Index cols, std::mt19937_64& rng) {
  auto limit = std::sqrt(T{6} / static_cast<T>(rows + cols));
  return uniform<T>(rows, cols, limit, rng);
}

template <class T>
matrix_t<T> uniform(Eigen::Index rows, Eigen::Index cols, T scale, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> draw{-1.0, 1.0};
  matrix_t<T> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i)
    m.data()[i] = static_cast<T>(draw(rng)) * scale;
  return m;
}

template <class T>
matrix_t<T> normal(Eigen::Index rows, Eigen::Index cols, T stddev, std::mt19937_64& rng) {
  std::normal_distribution<double> draw{0.0, 1.0};
  matrix_t<T> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i)
    m.data()[i] = static_cast<T>(draw(rng)) * stddev;
  return m;
}

#define DARCY_NN_INIT(T)                                                                \
  template matrix_t<T> glorot_uniform<T>(Eigen::Index, Eigen::Index, std::mt19937_64&); \
  template matrix_t<T> uniform<T>(Eigen::Index, Eigen::Index, T, std::mt19937_64&);     \
  template matrix_t<T> normal<T>(Eigen::Index, Eigen::Index, T, std::mt19937_64&);
DARCY_NN_INIT(float)
DARCY_NN_INIT(double)
#undef DARCY_NN_INIT

} // namespace darcy::compute::nn
