#include "compute/nn/relu.hpp"

namespace darcy::compute::nn {

template <class T>
auto relu<T>::forward(const matrix& x) -> matrix {
  y_ = x.cwiseMax(T{0});
  return y_;
}

template <class T>
auto relu<T>::backward(const matrix& dy) -> matrix {
  return (y_.array() > T{0}).select(dy, T{0});
}

template class relu<float>;
template class relu<double>;

} // namespace darcy::compute::nn
