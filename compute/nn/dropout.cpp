#include "compute/nn/dropout.hpp"

#include <random>

namespace darcy::compute::nn {

template <class T>
auto dropout<T>::forward(const matrix& x) -> matrix {
  if (!training_ || rate_ == 0) {
    mask_ = matrix::Ones(x.rows(), x.cols());
    return x;
  }
  std::mt19937_64 rng{seed_ ^ (step_ * 0x9E3779B97F4A7C15ull)};
  std::bernoulli_distribution keep{1.0 - rate_};
  auto scale = static_cast<T>(1.0 / (1.0 - rate_));
  mask_.resize(x.rows(), x.cols());
  for (Eigen::Index i = 0; i < mask_.size(); ++i)
    mask_.data()[i] = keep(rng) ? scale : T{0};
  return x.cwiseProduct(mask_);
}

template <class T>
auto dropout<T>::backward(const matrix& dy) -> matrix {
  return dy.cwiseProduct(mask_);
}

template class dropout<float>;
template class dropout<double>;

} // namespace darcy::compute::nn
