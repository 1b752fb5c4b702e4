#include "compute/ranking.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <Eigen/Core>

#include "compute/hash.hpp"
#include "compute/sampler.hpp"

namespace darcy::compute {

holdout_split split_holdout(const csr_matrix& m, double fraction, uint64_t seed) {
  std::vector<triple> train, test;
  std::vector<uint64_t> order;
  for (uint64_t r = 0; r < m.rows; ++r) {
    auto n = m.row_size(r);
    auto held = static_cast<uint64_t>(std::llround(fraction * static_cast<double>(n)));
    held = std::min(held, n > 0 ? n - 1 : 0);
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng{mix64(seed, r)};
    shuffle_prefix(order, held, rng); // the first `held` are held out
    for (uint64_t i = 0; i < n; ++i) {
      auto at = m.offsets[r] + order[i];
      triple t{static_cast<uint32_t>(r), m.indices[at], m.values[at]};
      (i < held ? test : train).push_back(t);
    }
  }
  return {*from_triples(m.rows, m.cols, std::move(train)),
          *from_triples(m.rows, m.cols, std::move(test))};
}

std::vector<uint64_t> balanced_blocks(const csr_matrix& m, uint32_t blocks, uint64_t row_cost) {
  return balanced_blocks(std::span<const uint64_t>{m.offsets}, blocks, row_cost);
}

std::vector<uint64_t> balanced_blocks(std::span<const uint64_t> offsets, uint32_t blocks,
                                      uint64_t row_cost) {
  auto rows = offsets.size() - 1;
  auto total = offsets.back() + rows * row_cost;
  std::vector<uint64_t> bounds{0};
  uint64_t r = 0;
  for (uint32_t b = 1; b < blocks; ++b) {
    auto target = total * b / blocks;
    while (r < rows && offsets[r] + r * row_cost < target)
      ++r;
    bounds.push_back(r);
  }
  bounds.push_back(rows);
  return bounds;
}

void ranking_accumulator::add(std::span<const uint32_t> ranked,
                              std::span<const uint32_t> relevant) {
  if (relevant.empty())
    return;
  auto n = std::min<size_t>(ranked.size(), k_);
  double hits = 0, precision_sum = 0, dcg = 0, idcg = 0;
  for (size_t i = 0; i < n; ++i)
    if (std::binary_search(relevant.begin(), relevant.end(), ranked[i])) {
      hits += 1;
      precision_sum += hits / static_cast<double>(i + 1);
      dcg += 1.0 / std::log2(static_cast<double>(i) + 2.0);
    }
  auto ideal = std::min<size_t>(relevant.size(), k_);
  for (size_t i = 0; i < ideal; ++i)
    idcg += 1.0 / std::log2(static_cast<double>(i) + 2.0);
  sum_.precision += hits / k_;
  sum_.recall += hits / static_cast<double>(relevant.size());
  sum_.map += precision_sum / static_cast<double>(ideal);
  sum_.ndcg += dcg / idcg;
  ++sum_.rows;
}

ranking_metrics ranking_accumulator::result() const {
  auto r = sum_;
  if (r.rows > 0) {
    auto n = static_cast<double>(r.rows);
    r.precision /= n;
    r.recall /= n;
    r.map /= n;
    r.ndcg /= n;
  }
  return r;
}

std::vector<uint32_t> top_columns(std::span<const float> scores, std::span<const uint32_t> seen,
                                  uint64_t candidates, uint32_t k) {
  std::vector<uint32_t> ids;
  auto limit = std::min<uint64_t>(candidates, scores.size());
  for (uint32_t c = 0; c < limit; ++c)
    if (!std::binary_search(seen.begin(), seen.end(), c) && std::isfinite(scores[c]))
      ids.push_back(c);
  auto n = std::min<size_t>(k, ids.size());
  std::partial_sort(
    ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
    [&](uint32_t a, uint32_t b) { return scores[a] != scores[b] ? scores[a] > scores[b] : a < b; });
  ids.resize(n);
  return ids;
}

std::vector<float> popularity_scores(const csr_matrix& train) {
  std::vector<float> counts(train.cols, 0.0f);
  for (auto c : train.indices)
    counts[c] += 1.0f;
  return counts;
}

ranking_metrics evaluate_factors(const holdout_split& split, factor_view u, factor_view v,
                                 uint64_t candidates, uint32_t k) {
  using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const row_major> vm(v.data, static_cast<Eigen::Index>(v.rows), v.dim);
  ranking_accumulator acc{k};
  std::vector<float> scores(v.rows);
  for (uint64_t r = 0; r < split.test.rows; ++r) {
    if (split.test.row_size(r) == 0)
      continue;
    Eigen::Map<Eigen::VectorXf> s(scores.data(), static_cast<Eigen::Index>(v.rows));
    s.noalias() = vm * Eigen::Map<const Eigen::VectorXf>(u.row(r), u.dim);
    acc.add(top_columns(scores, split.train.row_indices(r), candidates, k),
            split.test.row_indices(r));
  }
  return acc.result();
}

ranking_metrics evaluate_popularity(const holdout_split& split, uint64_t candidates, uint32_t k) {
  auto scores = popularity_scores(split.train);
  ranking_accumulator acc{k};
  for (uint64_t r = 0; r < split.test.rows; ++r)
    if (split.test.row_size(r) > 0)
      acc.add(top_columns(scores, split.train.row_indices(r), candidates, k),
              split.test.row_indices(r));
  return acc.result();
}

} // namespace darcy::compute
