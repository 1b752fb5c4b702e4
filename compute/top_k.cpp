#include "compute/top_k.hpp"

#include <algorithm>

#include "messages/errc.hpp"

namespace darcy::compute {

namespace {

// Candidates are scored in blocks so that the score matrix stays small for large shards.
constexpr Eigen::Index block_rows = 8192;

} // namespace

void top_k_heap::offer(const hit& h) {
  if (heap_.size() < k_) {
    heap_.push_back(h);
    std::push_heap(heap_.begin(), heap_.end(), ranks_before);
  } else if (k_ > 0 && ranks_before(h, heap_.front())) {
    std::pop_heap(heap_.begin(), heap_.end(), ranks_before);
    heap_.back() = h;
    std::push_heap(heap_.begin(), heap_.end(), ranks_before);
  }
}

std::vector<hit> top_k_heap::sorted() && {
  std::sort(heap_.begin(), heap_.end(), ranks_before);
  return std::move(heap_);
}

plain_expected<std::vector<std::vector<hit>>>
top_k_inner_product(const row_matrix& queries, const row_matrix& candidates,
                    std::span<const float> biases, size_t k) {
  if (queries.cols() != candidates.cols())
    return plain_error{errc::dimension_mismatch,
                      "queries have dim " + std::to_string(queries.cols()) +
                        ", candidates dim " + std::to_string(candidates.cols())};
  if (!biases.empty() && biases.size() != static_cast<size_t>(candidates.rows()))
    return plain_error{errc::dimension_mismatch, std::to_string(biases.size()) + " biases for " +
                                                  std::to_string(candidates.rows()) +
                                                  " candidates"};
  std::vector<top_k_heap> best(static_cast<size_t>(queries.rows()), top_k_heap{k});
  if (k > 0) {
    for (Eigen::Index start = 0; start < candidates.rows(); start += block_rows) {
      auto n = std::min(block_rows, candidates.rows() - start);
      Eigen::MatrixXf scores = queries * candidates.middleRows(start, n).transpose();
      for (Eigen::Index q = 0; q < queries.rows(); ++q)
        for (Eigen::Index c = 0; c < n; ++c) {
          auto id = static_cast<size_t>(start + c);
          float bias = biases.empty() ? 0.0f : biases[id];
          best[static_cast<size_t>(q)].offer({scores(q, c) + bias, id});
        }
    }
  }
  std::vector<std::vector<hit>> result;
  result.reserve(best.size());
  for (auto& b : best)
    result.push_back(std::move(b).sorted());
  return result;
}

std::vector<hit> merge_top_k(const std::vector<std::vector<hit>>& lists, size_t k) {
  top_k_heap best{k};
  for (auto& list : lists)
    for (auto& h : list)
      best.offer(h);
  return std::move(best).sorted();
}

void normalise_rows(row_matrix& m) {
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    if (auto norm = m.row(r).norm(); norm > 0)
      m.row(r) /= norm;
}

} // namespace darcy::compute
