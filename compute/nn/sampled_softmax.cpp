#include "compute/nn/sampled_softmax.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "compute/nn/softmax_cross_entropy.hpp"

namespace darcy::compute::nn {

plain_expected<sampled_candidates> draw_candidates(const candidate_distribution& dist,
                                                   std::span<const uint64_t> labels,
                                                   size_t num_sampled, std::mt19937_64& rng,
                                                   negative_draw draw) {
  if (num_sampled == 0)
    return plain_error{errc::invalid_argument, "a sampled softmax needs num_sampled > 0"};
  std::vector<uint64_t> positives(labels.begin(), labels.end());
  std::sort(positives.begin(), positives.end());
  positives.erase(std::unique(positives.begin(), positives.end()), positives.end());
  if (draw == negative_draw::remove_accidental_hits) {
    if (!positives.empty() && positives.back() >= dist.size())
      return plain_error{errc::invalid_argument, "label " + std::to_string(positives.back()) +
                                                   " is outside the " +
                                                   std::to_string(dist.size()) + " candidates"};
    positives.clear();
  }
  auto drawn = sample(dist, positives, num_sampled, rng);
  if (!drawn)
    return drawn.error();
  sampled_candidates c;
  std::unordered_map<uint64_t, uint32_t> place;
  auto index_of = [&](uint64_t id) {
    auto [it, added] = place.emplace(id, static_cast<uint32_t>(c.rows.size()));
    if (added) {
      c.rows.push_back(id);
      c.log_q.push_back(std::log(static_cast<double>(num_sampled) * dist.prob(id)));
    }
    return it->second;
  };
  for (auto& s : *drawn)
    if (!s.is_positive)
      c.sampled_index.push_back(index_of(s.id));
  for (auto label : labels)
    c.label_index.push_back(index_of(label));
  return c;
}

template <class T>
T sampled_softmax<T>::forward(const matrix& h, const matrix& weights, const matrix& bias,
                              const sampled_candidates& candidates) {
  h_ = h;
  weights_ = weights;
  candidates_ = &candidates;
  auto b = h.rows();
  auto s = static_cast<Eigen::Index>(candidates.sampled_index.size());
  matrix sampled_w(s, weights.cols());
  for (Eigen::Index j = 0; j < s; ++j)
    sampled_w.row(j) = weights.row(candidates.sampled_index[j]);
  // Column 0: the label; columns 1..s: the draws.
  matrix logits(b, 1 + s);
  logits.rightCols(s).noalias() = h * sampled_w.transpose();
  for (Eigen::Index j = 0; j < s; ++j) {
    auto row = candidates.sampled_index[j];
    logits.col(1 + j).array() += bias(0, row) - static_cast<T>(candidates.log_q[row]);
  }
  std::unordered_map<uint32_t, std::vector<Eigen::Index>> examples_of;
  for (Eigen::Index i = 0; i < b; ++i) {
    auto row = candidates.label_index[i];
    logits(i, 0) =
      h.row(i).dot(weights.row(row)) + bias(0, row) - static_cast<T>(candidates.log_q[row]);
    examples_of[row].push_back(i);
  }
  // Accidental hits: a draw of the example's own label is no negative of it.
  for (Eigen::Index j = 0; j < s; ++j)
    if (auto it = examples_of.find(candidates.sampled_index[j]); it != examples_of.end())
      for (auto i : it->second)
        logits(i, 1 + j) = static_cast<T>(-1e30);
  softmax_cross_entropy<T> loss;
  std::vector<uint32_t> zeros(static_cast<size_t>(b), 0);
  auto value = loss.forward(logits, zeros);
  dlogits_ = loss.backward();
  return value;
}

template <class T>
auto sampled_softmax<T>::backward() const -> gradients {
  auto& c = *candidates_;
  auto b = h_.rows();
  auto m = weights_.rows();
  gradients g{matrix::Zero(b, h_.cols()), matrix::Zero(m, weights_.cols()), matrix::Zero(1, m)};
  for (Eigen::Index i = 0; i < b; ++i) {
    auto row = c.label_index[i];
    g.h.row(i) += dlogits_(i, 0) * weights_.row(row);
    g.weights.row(row) += dlogits_(i, 0) * h_.row(i);
    g.bias(0, row) += dlogits_(i, 0);
  }
  auto s = static_cast<Eigen::Index>(c.sampled_index.size());
  for (Eigen::Index j = 0; j < s; ++j) {
    auto row = c.sampled_index[j];
    auto d = dlogits_.col(1 + j);
    g.h.noalias() += d * weights_.row(row);
    g.weights.row(row).noalias() += d.transpose() * h_;
    g.bias(0, row) += d.sum();
  }
  return g;
}

template class sampled_softmax<float>;
template class sampled_softmax<double>;

} // namespace darcy::compute::nn
