// Quantized maximum-inner-product search: the items are partitioned by k-means (the inverted
// file); each item's residual from its list's centroid is product-quantized to 4-bit codes
// (optionally under ScaNN's anisotropic loss). A query ranks the lists by a bound on their best
// inner product, scans the codes of the best ones with fast_scan, and re-ranks the best
// approximate candidates exactly.
//
//   auto index = ivf_pq_index::build(items, ids, {.threads = 2});
//   auto hits = index->search(queries, 10, {.probes = 32, .rerank = 100});
#pragma once

#include <cstdint>
#include <vector>

#include "compute/mips/product_quantizer.hpp"
#include "compute/shared_array.hpp"
#include "compute/top_k.hpp"
#include "messages/errc.hpp"

namespace darcy::compute::mips {

struct ivf_pq_options {
  /// Inverted lists; 0: 2 sqrt(items), at least 1. At most the item count.
  size_t lists = 0;
  /// Dimensions per product-quantizer subspace; raised as needed to keep 256 subspaces or
  /// fewer (the 16-bit sums of fast_scan).
  size_t dims_per_subspace = 2;
  /// ScaNN's threshold T of the anisotropic loss in encoding; 0: plain squared error (better
  /// on WALS factors, see docs/benchmarks.md).
  float anisotropic_threshold = 0.0f;
  /// Items the quantizers are trained on (a sample drawn by the seed), at least 64 per list.
  size_t train_sample = 131072;
  uint32_t iterations = 10;
  uint64_t seed = 1;
  uint32_t threads = 1;
  /// Lists as k-means clusters of [x, sqrt(M^2 - |x|^2)] (M: the longest item), the
  /// norm-augmentation reduction of MIPS to L2 search: long items get lists of their own
  /// instead of sitting far from the centroid of short ones. false: k-means on x. On WALS
  /// factors it gains nothing at recall 0.9, where the 4-bit codes limit recall, not the lists
  /// (docs/benchmarks.md); search it with distance_weight 1.
  bool augmented_lists = false;
  /// Score the last dimension exactly beside the codes, which cover the others: for the L2 ->
  /// inner-product augmentation [x, -|x|^2 / 2], whose last coordinate spans a range no 4-bit
  /// code can hold. Its lists come from the other dimensions (augmented_lists is ignored).
  /// Indexes built with it are for search in memory: exports refuse them.
  bool exact_last_dim = false;
};

struct ivf_pq_search_options {
  /// Lists scanned per query, in the order of
  ///   q.c - distance_weight (|c|^2 + a^2) / 2 + radius_weight |q| r,
  /// with a the mean augmented coordinate sqrt(M^2 - |x|^2) of the list's items and r its
  /// longest residual; more if they hold fewer than k items.
  size_t probes = 32;
  /// 1: the order of the augmented L2 distance |[q, 0] - [c, a]|, as FAISS's IVF over
  /// augmented vectors probes (for augmented lists). 0: by the centroid's score alone.
  float distance_weight = 0.0f;
  /// 0: lists in the order of their centroid's score. 1: of the bound on their best score.
  /// Between, a list holding a few long items (the popular items of WALS factors) is probed
  /// before lists whose centroid scores a little higher; 0.25 measured best on WALS factors
  /// (docs/benchmarks.md).
  float radius_weight = 0.25f;
  /// Approximate candidates re-scored exactly; at least k.
  size_t rerank = 100;
  uint32_t threads = 1;
};

/// What an index is made of, as export writes it and a shard loads it (the large arrays may
/// be views of mapped files). Items are in list order: list l holds rows [list_offsets[l],
/// list_offsets[l + 1]).
struct ivf_pq_parts {
  row_matrix centroids;               // lists x dim
  row_matrix codebooks;               // product_quantizer::codebooks()
  std::vector<uint64_t> list_offsets; // lists + 1
  shared_array<uint8_t> codes;        // fast_scan blocks, list by list, each from a new block
  shared_array<float> items;          // items x dim, row-major: exact vectors for re-ranking
  shared_array<uint64_t> ids;         // ids[row] names item row `row` in hits
  /// The codes cover the first dim - 1 dimensions; the last is scored exactly
  /// (ivf_pq_options::exact_last_dim).
  bool exact_last_dim = false;
};

class ivf_pq_index {
public:
  /// Trains the quantizers on `items` and encodes them; refuses items as check_items does.
  static plain_expected<ivf_pq_index> build(const row_matrix& items, std::vector<uint64_t> ids,
                                            const ivf_pq_options& o);

  /// An index from saved parts; errc::corrupt_file when their sizes disagree.
  static plain_expected<ivf_pq_index> from_parts(ivf_pq_parts parts);

  size_t size() const { return parts_.ids.size(); }
  size_t dim() const { return static_cast<size_t>(parts_.centroids.cols()); }
  /// The items, one per row, in list order.
  Eigen::Map<const row_matrix> items() const {
    return {parts_.items.data(), static_cast<Eigen::Index>(size()),
            static_cast<Eigen::Index>(dim())};
  }
  size_t lists() const { return static_cast<size_t>(parts_.centroids.rows()); }
  const ivf_pq_parts& parts() const { return parts_; }

  /// For each query, k hits, best first by exact inner product among the re-ranked candidates
  /// (ties by id). Refuses bad queries as check_queries does.
  plain_expected<std::vector<std::vector<hit>>> search(const row_matrix& queries, size_t k,
                                                       const ivf_pq_search_options& o) const;

private:
  explicit ivf_pq_index(ivf_pq_parts parts);

  struct search_scratch;
  std::vector<hit> search_one(const float* query, const float* list_scores, size_t k,
                              const ivf_pq_search_options& o, search_scratch& scratch) const;

  ivf_pq_parts parts_;
  product_quantizer quantizer_;
  /// First block of each list in parts_.codes, lists + 1 entries.
  std::vector<uint64_t> block_offsets_;
  /// The longest residual (item minus centroid) of each list: no item of list l scores above
  /// q.c_l + |q| radii_[l].
  std::vector<float> radii_;
  /// Each item's last coordinate less its centroid's, row order (exact_last_dim only).
  std::vector<float> last_residuals_;
  /// (|c_l|^2 + a_l^2 - M^2) / 2, see ivf_pq_search_options::probes.
  std::vector<float> half_distances_;
  size_t longest_list_ = 0;
};

} // namespace darcy::compute::mips
