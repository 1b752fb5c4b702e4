#include "compute/mips/exact_index.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

namespace darcy::compute::mips {

namespace {

// Items scored per block: 4096 rows of dim 64 are 1 MiB, which stays in cache while the
// queries of a batch are scored against them.
constexpr Eigen::Index item_block = 4096;
// Queries scored against a block at once; their scores (64 x 4096 floats) also stay in cache.
constexpr Eigen::Index query_block = 64;
// Below this many items per thread, a thread costs more than it saves.
constexpr size_t min_items_per_thread = 16384;

using score_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The first row of `m` holding a NaN or an infinity, or m.rows().
Eigen::Index first_non_finite_row(const row_matrix& m) {
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    if (!m.row(r).allFinite())
      return r;
  return m.rows();
}

} // namespace

plain_error check_queries(const row_matrix& queries, size_t dim, size_t items, size_t k) {
  if (static_cast<size_t>(queries.cols()) != dim)
    return {errc::dimension_mismatch, "queries have dim " + std::to_string(queries.cols()) +
                                        ", the index dim " + std::to_string(dim)};
  if (auto r = first_non_finite_row(queries); r < queries.rows())
    return {errc::invalid_argument, "query " + std::to_string(r) + " holds a NaN or infinity"};
  if (k == 0)
    return {errc::invalid_argument, "k must be at least 1"};
  if (k > items)
    return {errc::invalid_argument,
            "k = " + std::to_string(k) + " is above the " + std::to_string(items) + " items"};
  return {};
}

plain_expected<exact_index> exact_index::make(row_matrix items, std::vector<uint64_t> ids) {
  if (!ids.empty() && ids.size() != static_cast<size_t>(items.rows()))
    return plain_error{errc::dimension_mismatch, std::to_string(ids.size()) + " ids for " +
                                                   std::to_string(items.rows()) + " items"};
  if (auto r = first_non_finite_row(items); r < items.rows())
    return plain_error{errc::invalid_argument,
                       "item " + std::to_string(r) + " holds a NaN or infinity"};
  return exact_index{std::move(items), std::move(ids)};
}

std::vector<std::vector<hit>> exact_index::search_range(const row_matrix& queries, size_t k,
                                                        size_t begin, size_t end) const {
  auto nq = queries.rows();
  std::vector<top_k_heap> best(static_cast<size_t>(nq), top_k_heap{k});
  // Offers scores s[0, n) of rows first.. to one query's heap; once the heap is full, only a
  // score at least its worst can enter, so most scores cost one comparison.
  auto scan = [&](top_k_heap& heap, const float* s, Eigen::Index n, size_t first) {
    auto id_of = [&](size_t row) { return ids_.empty() ? row : ids_[row]; };
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
  for (auto start = static_cast<Eigen::Index>(begin); start < static_cast<Eigen::Index>(end);
       start += item_block) {
    auto n = std::min(item_block, static_cast<Eigen::Index>(end) - start);
    auto block = items_.middleRows(start, n);
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
  for (auto& heap : best)
    result.push_back(std::move(heap).sorted());
  return result;
}

plain_expected<std::vector<std::vector<hit>>>
exact_index::search(const row_matrix& queries, size_t k, uint32_t threads) const {
  if (auto err = check_queries(queries, dim(), size(), k))
    return err;
  auto parts = std::clamp<size_t>(size() / min_items_per_thread, 1, std::max(threads, 1u));
  if (parts == 1)
    return search_range(queries, k, 0, size());
  std::vector<std::vector<std::vector<hit>>> partial(parts);
  std::vector<std::thread> workers;
  auto range = [&](size_t p) { return size() * p / parts; };
  for (size_t p = 1; p < parts; ++p)
    workers.emplace_back([&, p] { partial[p] = search_range(queries, k, range(p), range(p + 1)); });
  partial[0] = search_range(queries, k, 0, range(1));
  for (auto& w : workers)
    w.join();
  std::vector<std::vector<hit>> result(static_cast<size_t>(queries.rows()));
  std::vector<std::vector<hit>> lists(parts);
  for (size_t q = 0; q < result.size(); ++q) {
    for (size_t p = 0; p < parts; ++p)
      lists[p] = std::move(partial[p][q]);
    result[q] = merge_top_k(lists, k);
  }
  return result;
}

} // namespace darcy::compute::mips
