// Exact maximum-inner-product search over a fixed set of items, with the checks a served
// query needs: compute::top_k_inner_product over ranges of the items, one range per thread,
// merged.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compute/top_k.hpp"
#include "messages/errc.hpp"

namespace darcy::compute::mips {

/// Refuses a batch of queries for an index of `items` items of dimension `dim`:
/// errc::dimension_mismatch for another column count, errc::invalid_argument for a NaN or
/// infinite value (naming the query), a k of 0, or a k above the item count.
plain_error check_queries(const row_matrix& queries, size_t dim, size_t items, size_t k);

/// Refuses items for an index: errc::invalid_argument for a NaN or infinite value (naming the
/// row), errc::dimension_mismatch for ids of another length than the rows (empty ids pass).
plain_error check_items(const row_matrix& items, std::span<const uint64_t> ids);

/// `ids`, or the row numbers 0 .. rows - 1 when it is empty.
std::vector<uint64_t> ids_or_rows(std::vector<uint64_t> ids, size_t rows);

class exact_index {
public:
  /// `items` holds one item per row, all finite (else errc::invalid_argument naming the row).
  /// ids[i] names row i in hits; empty ids: the row numbers. Fails with
  /// errc::dimension_mismatch when ids has another length.
  static plain_expected<exact_index> make(row_matrix items, std::vector<uint64_t> ids = {});

  size_t size() const { return static_cast<size_t>(items_.rows()); }
  size_t dim() const { return static_cast<size_t>(items_.cols()); }
  const row_matrix& items() const { return items_; }

  /// For each query row, its k best items by inner product, best first, ties by id. Uses up to
  /// `threads` threads, each on its own range of items. Refuses bad queries (check_queries).
  plain_expected<std::vector<std::vector<hit>>> search(const row_matrix& queries, size_t k,
                                                       uint32_t threads = 1) const;

private:
  exact_index(row_matrix items, std::vector<uint64_t> ids)
    : items_(std::move(items)), ids_(std::move(ids)) {}

  // The k best of items [begin, end) for every query.
  std::vector<std::vector<hit>> search_range(const row_matrix& queries, size_t k, size_t begin,
                                             size_t end) const;

  row_matrix items_;
  /// One id per item (the row numbers when none were given).
  std::vector<uint64_t> ids_;
};

} // namespace darcy::compute::mips
