#include "compute/mips/exact_index.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "compute/finite.hpp"
#include "compute/parallel.hpp"

namespace darcy::compute::mips {

namespace {

// Below this many items per thread, a thread costs more than it saves.
constexpr size_t min_items_per_thread = 16384;

// The first row of `m` holding a NaN or an infinity, or m.rows().
Eigen::Index first_non_finite_row(const row_matrix& m) {
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    if (!all_finite(std::span{m.row(r).data(), static_cast<size_t>(m.cols())}))
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

plain_error check_items(const row_matrix& items, std::span<const uint64_t> ids) {
  if (!ids.empty() && ids.size() != static_cast<size_t>(items.rows()))
    return {errc::dimension_mismatch,
            std::to_string(ids.size()) + " ids for " + std::to_string(items.rows()) + " items"};
  if (auto r = first_non_finite_row(items); r < items.rows())
    return {errc::invalid_argument, "item " + std::to_string(r) + " holds a NaN or infinity"};
  return {};
}

std::vector<uint64_t> ids_or_rows(std::vector<uint64_t> ids, size_t rows) {
  if (ids.empty()) {
    ids.resize(rows);
    std::iota(ids.begin(), ids.end(), uint64_t{0});
  }
  return ids;
}

plain_expected<exact_index> exact_index::make(row_matrix items, std::vector<uint64_t> ids) {
  if (auto err = check_items(items, ids))
    return err;
  auto rows = static_cast<size_t>(items.rows());
  return exact_index{std::move(items), ids_or_rows(std::move(ids), rows)};
}

std::vector<std::vector<hit>> exact_index::search_range(const row_matrix& queries, size_t k,
                                                        size_t begin, size_t end) const {
  auto n = end - begin;
  // Cannot fail: make() and check_queries() checked the dimension and the ids.
  return std::move(*top_k_inner_product(
    queries, items_.middleRows(static_cast<Eigen::Index>(begin), static_cast<Eigen::Index>(n)), {},
    k, std::span<const uint64_t>{ids_}.subspan(begin, n)));
}

plain_expected<std::vector<std::vector<hit>>> exact_index::search(const row_matrix& queries,
                                                                  size_t k,
                                                                  uint32_t threads) const {
  if (auto err = check_queries(queries, dim(), size(), k))
    return err;
  auto parts = std::clamp<size_t>(size() / min_items_per_thread, 1, std::max(threads, 1u));
  if (parts == 1)
    return search_range(queries, k, 0, size());
  std::vector<std::vector<std::vector<hit>>> partial(parts);
  parallel_ranges(size(), parts, [&](size_t p, size_t begin, size_t end) {
    partial[p] = search_range(queries, k, begin, end);
  });
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
