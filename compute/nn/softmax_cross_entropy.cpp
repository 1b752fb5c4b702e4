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

template <class T>
T soft_target_cross_entropy(const matrix_t<T>& logits, const matrix_t<T>& targets,
                            matrix_t<T>& dlogits) {
  T total = 0;
  for (Eigen::Index r = 0; r < logits.rows(); ++r) {
    auto max = logits.row(r).maxCoeff();
    auto log_sum = max + std::log((logits.row(r).array() - max).exp().sum());
    for (Eigen::Index c = 0; c < logits.cols(); ++c)
      if (targets(r, c) > 0) // a masked column's −1e30 never meets a weight
        total += targets(r, c) * (log_sum - logits(r, c));
  }
  auto batch = static_cast<T>(logits.rows());
  dlogits = (softmax_rows<T>(logits) - targets) / batch;
  return total / batch;
}

template class softmax_cross_entropy<float>;
template class softmax_cross_entropy<double>;
template matrix_t<float> softmax_rows<float>(const matrix_t<float>&);
template matrix_t<double> softmax_rows<double>(const matrix_t<double>&);
template float soft_target_cross_entropy<float>(const matrix_t<float>&, const matrix_t<float>&,
                                                matrix_t<float>&);
template double soft_target_cross_entropy<double>(const matrix_t<double>&, const matrix_t<double>&,
                                                  matrix_t<double>&);

} // namespace darcy::compute::nn
