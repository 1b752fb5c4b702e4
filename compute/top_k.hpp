// Exact maximum-inner-product top-k with the bias trick: a query c scores candidate row w with
// bias b as [c;1]·[w;b] = c·w + b. Each shard answers its own top k; merge_top_k combines the
// shards' answers into the global top k. Order: score descending, then id ascending.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <Eigen/Dense>

#include "messages/errc.hpp"

namespace darcy::compute {

struct hit {
  float score = 0;
  uint64_t id = 0;

  friend bool operator==(const hit&, const hit&) = default;
};

/// True when `a` ranks before `b`.
inline bool ranks_before(const hit& a, const hit& b) {
  return a.score > b.score || (a.score == b.score && a.id < b.id);
}

/// The best k hits offered so far, kept as a heap whose front is the worst of them.
class top_k_heap {
public:
  explicit top_k_heap(size_t k) : k_(k) { heap_.reserve(k); }

  bool full() const { return heap_.size() >= k_; }
  /// The worst hit kept; only when full() and k > 0.
  const hit& worst() const { return heap_.front(); }
  void offer(const hit& h);
  /// The hits kept, best first.
  std::vector<hit> sorted() &&;

private:
  size_t k_;
  std::vector<hit> heap_;
};

using row_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// For each row of `queries`, the min(k, candidates.rows()) best candidates. A hit's id is
/// ids[row] or, with ids empty, the candidate's row number; ties go to the smaller id. `biases`
/// is empty (no bias) or one value per candidate. Fails with errc::dimension_mismatch when the
/// column counts or the bias or id counts disagree. `candidates` may be a block of rows of a
/// larger matrix; it is not copied.
plain_expected<std::vector<std::vector<hit>>> top_k_inner_product(
  const row_matrix& queries, Eigen::Ref<const row_matrix> candidates, std::span<const float> biases,
  size_t k, std::span<const uint64_t> ids = {});

/// Queries ready to score whole rows of `dim` values: each query (dim values, or dim - 1 then
/// a 1 `with_bias`, so that [c;1]·[w;b] adds the row's bias) as a row, scaled to unit length
/// for `cosine`. `queries` must hold a whole number of queries.
row_matrix extended_queries(std::span<const float> queries, Eigen::Index dim, bool with_bias,
                            bool cosine);

/// Scales each row of `m` to unit length, so that inner products become cosines; a zero row
/// stays zero (and scores 0 against anything).
void normalise_rows(row_matrix& m);

/// The best k of the union of `lists` (each already ordered, ids unique across lists).
std::vector<hit> merge_top_k(const std::vector<std::vector<hit>>& lists, size_t k);

/// Recall of approximate answers: the share of the ids in truth[q] (over every query q) that
/// found[q] also holds; 0 when truth holds none.
double recall_at(const std::vector<std::vector<hit>>& truth,
                 const std::vector<std::vector<hit>>& found);

} // namespace darcy::compute
