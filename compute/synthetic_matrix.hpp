// A synthetic implicit-feedback matrix for scale tests: item popularity follows Zipf's law and
// which items a row picks leans on a planted low-rank score, so the matrix has structure for
// WALS to find. Row r depends only on (seed, r): any thread count gives the same matrix.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "compute/sampler.hpp"

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

/// The rows of synthetic_matrix one at a time, for a matrix too large to build in memory: the
/// popularity law and the columns' planted factors (rank floats a column) are held, rows are
/// drawn on demand. Any number of threads may call row() at once.
class synthetic_rows {
public:
  /// Fails as synthetic_matrix does.
  static plain_expected<synthetic_rows> make(const synthetic_spec& spec);

  /// Row r's entries, (column, value) by ascending column, into `out` (its old contents gone).
  void row(uint64_t r, std::vector<std::pair<uint32_t, float>>& out) const;

  const synthetic_spec& spec() const { return spec_; }

private:
  synthetic_rows(synthetic_spec spec, candidate_distribution popularity, uint64_t multiplier,
                 uint32_t rank, std::vector<float> col_factors, uint64_t max_row)
    : spec_(spec),
      popularity_(std::move(popularity)),
      multiplier_(multiplier),
      rank_(rank),
      col_factors_(std::move(col_factors)),
      max_row_(max_row) {}

  synthetic_spec spec_;
  candidate_distribution popularity_;
  uint64_t multiplier_;
  uint32_t rank_;
  std::vector<float> col_factors_;
  uint64_t max_row_;
};

/// Values are play counts in [1, 8), larger where the planted score is larger. Fails with
/// errc::invalid_argument for an empty shape, more than 2^32 - 1 rows or cols, or nnz < rows.
plain_expected<csr_matrix> synthetic_matrix(const synthetic_spec& spec);

} // namespace darcy::compute
