// A sparse matrix in compressed sparse row form, built from (row, col, value) triples, with its
// transpose. The WALS solvers read one of these per side: rows for U, its transpose for V.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "messages/errc.hpp"

namespace darcy::compute {

struct triple {
  uint32_t row = 0;
  uint32_t col = 0;
  float value = 0;
};

struct csr_matrix {
  uint64_t rows = 0;
  uint64_t cols = 0;
  /// rows + 1 entries; row r holds indices[offsets[r] .. offsets[r + 1]), columns ascending.
  std::vector<uint64_t> offsets{0};
  std::vector<uint32_t> indices;
  std::vector<float> values;

  uint64_t nnz() const { return indices.size(); }
  uint64_t row_size(uint64_t r) const { return offsets[r + 1] - offsets[r]; }
  std::span<const uint32_t> row_indices(uint64_t r) const {
    return {indices.data() + offsets[r], row_size(r)};
  }
  std::span<const float> row_values(uint64_t r) const {
    return {values.data() + offsets[r], row_size(r)};
  }
};

/// Builds a rows x cols matrix. Duplicate (row, col) pairs are summed. Fails with
/// errc::invalid_argument when a triple lies outside the shape.
plain_expected<csr_matrix> from_triples(uint64_t rows, uint64_t cols, std::vector<triple> triples);

/// The transpose, by counting sort: O(nnz + cols), columns ascending in every row.
csr_matrix transpose(const csr_matrix& m);

/// Rows [begin, end) of `m` as a matrix of end - begin rows with the same columns.
csr_matrix slice_rows(const csr_matrix& m, uint64_t begin, uint64_t end);

} // namespace darcy::compute
