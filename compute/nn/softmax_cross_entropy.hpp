// The full softmax cross-entropy loss: the batch mean of −log softmax(logits)[label]. Its
// per-row form also gives evaluation perplexity, exp(mean loss over every word).
#pragma once

#include <cstdint>
#include <span>

#include "compute/nn/tensor.hpp"

namespace darcy::compute::nn {

template <class T>
class softmax_cross_entropy {
public:
  using matrix = matrix_t<T>;

  /// Preconditions: labels.size() == logits.rows() > 0 and every label < logits.cols().
  T forward(const matrix& logits, std::span<const uint32_t> labels);

  /// dL/dlogits of the last forward: (softmax − one_hot(label)) / batch.
  matrix backward() const;

  /// softmax(logits) of the last forward.
  const matrix& probabilities() const { return probabilities_; }

private:
  matrix probabilities_;
  std::vector<uint32_t> labels_;
};

/// Softmax cross-entropy against target distributions, for examples with several labels: the
/// batch mean of −Σ_c targets(r, c) · log softmax(logits.row(r))_c. Writes dL/dlogits,
/// (softmax − targets) / batch, to `dlogits`. Preconditions: equal shapes, rows > 0, each row of
/// `targets` non-negative with sum 1. A column with target 0 may hold a masked logit (−1e30):
/// it then gets probability 0 and no gradient.
template <class T>
T soft_target_cross_entropy(const matrix_t<T>& logits, const matrix_t<T>& targets,
                            matrix_t<T>& dlogits);

/// Row-wise softmax, computed stably (the row maximum subtracted first).
template <class T>
matrix_t<T> softmax_rows(const matrix_t<T>& logits);

} // namespace darcy::compute::nn
