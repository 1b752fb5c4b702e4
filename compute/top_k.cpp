#include "compute/top_k.hpp"

#include <algorithm>

#include "messages/errc.hpp"

namespace darcy::compute {

namespace {

// Candidates scored per block: 4096 rows of dim 64 are 1 MiB, which stays in cache while the
// queries are scored against them.
constexpr Eigen::Index block_rows = 4096;
// Queries scored against a block at once; their scores (64 x 4096 floats) also stay in cache.
constexpr Eigen::Index query_block = 64;

using score_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

} // namespace

namespace {

// ranks_before as a type the heap algorithms inline, where a function pointer is called.
constexpr auto ranked = [](const hit& a, const hit& b) { return ranks_before(a, b); };

} // namespace

void top_k_heap::offer(const hit& h) {
  if (heap_.size() < k_) {
    heap_.push_back(h);
    std::push_heap(heap_.begin(), heap_.end(), ranked);
  } else if (k_ > 0 && ranks_before(h, heap_.front())) {
    std::pop_heap(heap_.begin(), heap_.end(), ranked);
    heap_.back() = h;
    std::push_heap(heap_.begin(), heap_.end(), ranked);
  }
}

std::vector<hit> top_k_heap::sorted() && {
  std::sort(heap_.begin(), heap_.end(), ranked);
  return std::move(heap_);
}

plain_expected<std::vector<std::vector<hit>>> top_k_inner_product(
  const row_matrix& queries, Eigen::Ref<const row_matrix> candidates, std::span<const float> biases,
  size_t k, std::span<const uint64_t> ids) {
  if (queries.cols() != candidates.cols())
    return plain_error{errc::dimension_mismatch,
                       "queries have dim " + std::to_string(queries.cols()) + ", candidates dim " +
                         std::to_string(candidates.cols())};
  auto rows = static_cast<size_t>(candidates.rows());
  if (!biases.empty() && biases.size() != rows)
    return plain_error{errc::dimension_mismatch, std::to_string(biases.size()) + " biases for " +
                                                   std::to_string(rows) + " candidates"};
  if (!ids.empty() && ids.size() != rows)
    return plain_error{errc::dimension_mismatch, std::to_string(ids.size()) + " ids for " +
                                                   std::to_string(rows) + " candidates"};
  auto nq = queries.rows();
  std::vector<top_k_heap> best(static_cast<size_t>(nq), top_k_heap{k});
  auto id_of = [&](size_t row) { return ids.empty() ? row : ids[row]; };
  // Offers scores s[0, n) of rows first.. to one query's heap; once the heap is full, only a
  // score at least its worst can enter, so most scores cost one comparison.
  auto scan = [&](top_k_heap& heap, float* s, Eigen::Index n, size_t first) {
    if (!biases.empty())
      Eigen::Map<Eigen::VectorXf>{s, n} +=
        Eigen::Map<const Eigen::VectorXf>{biases.data() + first, n};
    Eigen::Index i = 0;
    for (; i < n && !heap.full(); ++i)
      heap.offer({s[i], id_of(first + static_cast<size_t>(i))});
    if (i == n)
      return;
    float threshold = heap.worst().score;
    for (; i < n; ++i)
      if (s[i] >= threshold) {
        heap.offer({s[i], id_of(first + static_cast<size_t>(i))});
        threshold = heap.worst().score;
      }
  };
  Eigen::VectorXf one;
  score_matrix scores;
  for (Eigen::Index start = 0; k > 0 && start < candidates.rows(); start += block_rows) {
    auto n = std::min(block_rows, candidates.rows() - start);
    auto block = candidates.middleRows(start, n);
    auto first = static_cast<size_t>(start);
    if (nq == 1) {
      one.noalias() = block * queries.row(0).transpose();
      scan(best[0], one.data(), n, first);
      continue;
    }
    for (Eigen::Index q0 = 0; q0 < nq; q0 += query_block) {
      auto qn = std::min(query_block, nq - q0);
      scores.noalias() = queries.middleRows(q0, qn) * block.transpose();
      for (Eigen::Index q = 0; q < qn; ++q)
        scan(best[static_cast<size_t>(q0 + q)], scores.row(q).data(), n, first);
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

row_matrix extended_queries(std::span<const float> queries, Eigen::Index dim, bool with_bias,
                            bool cosine) {
  auto qdim = with_bias ? dim - 1 : dim;
  auto nq = static_cast<Eigen::Index>(queries.size()) / qdim;
  row_matrix q = row_matrix::Ones(nq, dim);
  q.leftCols(qdim) = Eigen::Map<const row_matrix>(queries.data(), nq, qdim);
  if (cosine)
    normalise_rows(q);
  return q;
}

void normalise_rows(row_matrix& m) {
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    if (auto norm = m.row(r).norm(); norm > 0)
      m.row(r) /= norm;
}

double recall_at(const std::vector<std::vector<hit>>& truth,
                 const std::vector<std::vector<hit>>& found) {
  size_t same = 0, all = 0;
  for (size_t q = 0; q < truth.size(); ++q) {
    all += truth[q].size();
    if (q >= found.size())
      continue;
    for (auto& h : found[q])
      same += static_cast<size_t>(std::count_if(truth[q].begin(), truth[q].end(),
                                                [&](const hit& t) { return t.id == h.id; }));
  }
  return all == 0 ? 0.0 : static_cast<double>(same) / static_cast<double>(all);
}

} // namespace darcy::compute
