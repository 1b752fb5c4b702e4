// A synthetic implicit-feedback matrix for scale tests: item popularity follows Zipf's law and
// which items a row picks leans on a planted low-rank score, so the matrix has structure for
// WALS to find. Row r depends only on (seed, r): any thread count gives the same matrix.
#pragma once

#include <cstdint>

#include "compute/sparse_matrix.hpp"
#include "messages/errc.hpp"

namespace darcy::compute {

struct synthetic_spec {
  uint64_t rows = 0;
  uint64_t cols = 0;
  /// About this many entries: row sizes are uniform in [1, 2 nnz / rows - 1] before duplicates
  /// are removed.
  uint64_t nnz = 0;
  uint64_t seed = 1;
  double zipf_exponent = 0.9;
  uint32_t planted_rank = 8;
  uint32_t threads = 1;
};

/// Values are play counts in [1, 8), larger where the planted score is larger. Fails with
/// errc::invalid_argument for an empty shape, more than 2^32 - 1 rows or cols, or nnz < rows.
plain_expected<csr_matrix> synthetic_matrix(const synthetic_spec& spec);

} // namespace darcy::compute
