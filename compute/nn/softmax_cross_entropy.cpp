#include "compute/nn/softmax_cross_entropy.hpp"

#include <cmath>

namespace darcy::compute::nn {

template <class T>
matrix_t<T> softmax_rows(const matrix_t<T>& logits) {
  matrix_t<T> p = logits.colwise() - logits.rowwise().maxCoeff();
  p = p.array().exp();
  p.array().colwise() /= p.rowwise().sum().array();
  return p;
}

template <class T>
T softmax_cross_entropy<T>::forward(const matrix& logits, std::span<const uint32_t> labels) {
  probabilities_ = softmax_rows<T>(logits);
  labels_.assign(labels.begin(), labels.end());
  // −log p computed from the logits, not from p, so that tiny probabilities stay exact.
  T total = 0;
  for (Eigen::Index r = 0; r < logits.rows(); ++r) {
    auto max = logits.row(r).maxCoeff();
    auto log_sum = max + std::log((logits.row(r).array() - max).exp().sum());
    total += log_sum - logits(r, labels[r]);
  }
  return total / static_cast<T>(logits.rows());
}

template <class T>
auto softmax_cross_entropy<T>::backward() const -> matrix {
  matrix d = probabilities_;
  for (size_t r = 0; r < labels_.size(); ++r)
    d(static_cast<Eigen::Index>(r), labels_[r]) -= T{1};
  return d / static_cast<T>(labels_.size());
}

template class softmax_cross_entropy<float>;
template class softmax_cross_entropy<double>;
template matrix_t<float> softmax_rows<float>(const matrix_t<float>&);
template matrix_t<double> softmax_rows<double>(const matrix_t<double>&);

} // namespace darcy::compute::nn
