// Offline evaluation of a factorization as a recommender: a seeded per-row hold-out split,
// top-k retrieval that skips what a row already has, precision/recall/MAP/NDCG at k, and the
// popularity baseline on the same split.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compute/sparse_matrix.hpp"
#include "compute/wals_math.hpp"

namespace darcy::compute {

struct holdout_split {
  csr_matrix train;
  csr_matrix test;
};

/// Holds out round(fraction * n) of each row's n entries, chosen by an RNG seeded with
/// (seed, row); a row keeps at least one training entry.
holdout_split split_holdout(const csr_matrix& m, double fraction, uint64_t seed);

/// The balanced partition of m's rows into `blocks` contiguous ranges: boundaries[b] ..
/// boundaries[b + 1] is block b, each with about the same entries + `row_cost` per row.
/// Returns blocks + 1 boundaries; blocks must be >= 1.
std::vector<uint64_t> balanced_blocks(const csr_matrix& m, uint32_t blocks, uint64_t row_cost = 16);
/// The same over a matrix's row offsets alone (rows + 1 of them, the last its entries' count).
std::vector<uint64_t> balanced_blocks(std::span<const uint64_t> offsets, uint32_t blocks,
                                      uint64_t row_cost = 16);

struct ranking_metrics {
  double precision = 0;
  double recall = 0;
  double map = 0;
  double ndcg = 0;
  /// Rows with at least one held-out entry: the denominator of the means.
  uint64_t rows = 0;
};

/// Accumulates the mean metrics at k over rows.
class ranking_accumulator {
public:
  explicit ranking_accumulator(uint32_t k) : k_(k) {}
  /// `ranked` best first (at most k are used); `relevant` must be sorted. Rows without relevant
  /// entries are ignored.
  void add(std::span<const uint32_t> ranked, std::span<const uint32_t> relevant);
  ranking_metrics result() const;

private:
  uint32_t k_;
  ranking_metrics sum_;
};

/// The k columns of largest score, excluding `seen` (sorted) and columns >= `candidates`.
std::vector<uint32_t> top_columns(std::span<const float> scores, std::span<const uint32_t> seen,
                                  uint64_t candidates, uint32_t k);

/// Columns by descending training count (ties by id): the popularity ranking.
std::vector<float> popularity_scores(const csr_matrix& train);

/// Metrics of u . v scoring for every row of `test`, recommending among the first `candidates`
/// columns and skipping the row's training columns.
ranking_metrics evaluate_factors(const holdout_split& split, factor_view u, factor_view v,
                                 uint64_t candidates, uint32_t k);

/// The same metrics when every row gets the popularity ranking.
ranking_metrics evaluate_popularity(const holdout_split& split, uint64_t candidates, uint32_t k);

} // namespace darcy::compute
