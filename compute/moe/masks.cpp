#include "compute/moe/masks.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

namespace darcy::compute::moe {

namespace {

/// The positions of the `count` largest of n values read through `at`, ties to the lower
/// one, in no particular order (a selection, not a sort: masks need only the set).
template <class At>
std::vector<Eigen::Index> largest(Eigen::Index n, uint32_t count, At at) {
  std::vector<Eigen::Index> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  if (count < order.size())
    std::nth_element(
      order.begin(), order.begin() + count, order.end(),
      [&](Eigen::Index a, Eigen::Index b) { return at(a) > at(b) || (at(a) == at(b) && a < b); });
  order.resize(count);
  return order;
}

} // namespace

template <class T>
matrix_t<T> top_k_mask(const matrix_t<T>& values, uint32_t k) {
  matrix_t<T> mask = matrix_t<T>::Zero(values.rows(), values.cols());
  for (Eigen::Index r = 0; r < values.rows(); ++r)
    for (auto c : largest(values.cols(), k, [&](Eigen::Index c) { return values(r, c); }))
      mask(r, c) = 1;
  return mask;
}

template <class T>
matrix_t<T> batchwise_mask(const matrix_t<T>& values, uint32_t m) {
  matrix_t<T> mask = matrix_t<T>::Zero(values.rows(), values.cols());
  std::vector<T> column(static_cast<size_t>(values.rows()));
  for (Eigen::Index c = 0; c < values.cols(); ++c) {
    for (Eigen::Index r = 0; r < values.rows(); ++r)
      column[r] = values(r, c); // contiguous: the selection reads it many times
    for (auto r : largest(values.rows(), m, [&](Eigen::Index r) { return column[r]; }))
      mask(r, c) = 1;
  }
  return mask;
}

uint32_t batchwise_m(uint32_t k, uint32_t batch, uint32_t experts) {
  auto m = static_cast<uint64_t>(k) * batch / std::max<uint32_t>(experts, 1);
  return static_cast<uint32_t>(std::clamp<uint64_t>(m, std::min<uint32_t>(batch, 1), batch));
}

template <class T>
matrix_t<T> threshold_mask(const matrix_t<T>& values, const matrix_t<T>& thresholds) {
  matrix_t<T> mask(values.rows(), values.cols());
  for (Eigen::Index r = 0; r < values.rows(); ++r)
    mask.row(r) = (values.row(r).array() > thresholds.row(0).array()).template cast<T>();
  return mask;
}

template <class T>
double mask_agreement(const matrix_t<T>& a, const matrix_t<T>& b) {
  if (a.size() == 0)
    return 1.0;
  return static_cast<double>((a.array() == b.array()).count()) / static_cast<double>(a.size());
}

template <class T>
loss_and_grad<T> balance_loss(const matrix_t<T>& gates) {
  auto b = static_cast<T>(gates.rows());
  auto n = static_cast<T>(gates.cols());
  matrix_t<T> excess = (gates.colwise().sum() / b).array() - T{1} / n;
  loss_and_grad<T> out;
  out.value = excess.squaredNorm() / 2;
  out.grad = excess.replicate(gates.rows(), 1) / b;
  return out;
}

template <class T>
loss_and_grad<T> cv_squared(const matrix_t<T>& values) {
  auto n = static_cast<T>(values.size());
  loss_and_grad<T> out;
  out.grad = matrix_t<T>::Zero(values.rows(), values.cols());
  auto mean = values.sum() / n;
  if (mean == 0)
    return out;
  matrix_t<T> centered = values.array() - mean;
  auto variance = centered.squaredNorm() / n;
  out.value = variance / (mean * mean);
  // d var / d v_i = 2 (v_i − mean) / n; d mean / d v_i = 1 / n.
  out.grad =
    (centered * (T{2} / (n * mean * mean))).array() - T{2} * variance / (n * mean * mean * mean);
  return out;
}

template <class T>
loss_and_grad<T> batchwise_threshold_loss(const matrix_t<T>& values, const matrix_t<T>& thresholds,
                                          const matrix_t<T>& batchwise) {
  auto b = static_cast<T>(std::max<Eigen::Index>(values.rows(), 1));
  matrix_t<T> disagreement = threshold_mask<T>(values, thresholds) - batchwise;
  matrix_t<T> margin = values.rowwise() - thresholds.row(0);
  loss_and_grad<T> out;
  out.value = disagreement.cwiseProduct(margin).sum() / b;
  out.grad = -disagreement.colwise().sum() / b;
  return out;
}

#define DARCY_MOE_MASKS(T)                                                                      \
  template matrix_t<T> top_k_mask<T>(const matrix_t<T>&, uint32_t);                             \
  template matrix_t<T> batchwise_mask<T>(const matrix_t<T>&, uint32_t);                         \
  template matrix_t<T> threshold_mask<T>(const matrix_t<T>&, const matrix_t<T>&);               \
  template double mask_agreement<T>(const matrix_t<T>&, const matrix_t<T>&);                    \
  template loss_and_grad<T> balance_loss<T>(const matrix_t<T>&);                                \
  template loss_and_grad<T> cv_squared<T>(const matrix_t<T>&);                                  \
  template loss_and_grad<T> batchwise_threshold_loss<T>(const matrix_t<T>&, const matrix_t<T>&, \
                                                        const matrix_t<T>&);
DARCY_MOE_MASKS(float)
DARCY_MOE_MASKS(double)
#undef DARCY_MOE_MASKS

} // namespace darcy::compute::moe
