#include "compute/nn/sequential.hpp"

namespace darcy::compute::nn {

template <class T>
auto sequential<T>::forward(const matrix& x) -> matrix {
  matrix y = x;
  for (auto& l : layers_)
    y = l->forward(y);
  return y;
}

template <class T>
auto sequential<T>::backward(const matrix& dy) -> matrix {
  matrix d = dy;
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it)
    d = (*it)->backward(d);
  return d;
}

template <class T>
parameter_list<T> sequential<T>::parameters() {
  parameter_list<T> all;
  for (auto& l : layers_)
    for (auto* p : l->parameters())
      all.push_back(p);
  return all;
}

template <class T>
void sequential<T>::set_training(bool training) {
  for (auto& l : layers_)
    l->set_training(training);
}

template <class T>
void sequential<T>::set_threads(size_t threads) {
  for (auto& l : layers_)
    l->set_threads(threads);
}

template class sequential<float>;
template class sequential<double>;

} // namespace darcy::compute::nn
