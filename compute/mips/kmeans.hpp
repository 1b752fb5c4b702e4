// Lloyd's k-means, the trainer of both quantizers of an ivf_pq_index: the coarse partition of
// the items and the small codebooks of each product-quantizer subspace.
//
//   auto centroids = kmeans(sample, {.clusters = 1024, .iterations = 10, .seed = 7});
//   auto list = nearest_centroids(items, centroids, 2);  // list[i]: the cluster of row i
#pragma once

#include <cstdint>
#include <vector>

#include "compute/top_k.hpp"

namespace darcy::compute::mips {

struct kmeans_options {
  /// Clusters; at most the number of points.
  size_t clusters = 16;
  uint32_t iterations = 10;
  uint64_t seed = 1;
  uint32_t threads = 1;
};

/// Centroids (one per row) minimising the squared distance of `points` to their nearest one.
/// Starts from distinct points chosen by the seed; a cluster that empties is restarted at the
/// point farthest from its centroid. Deterministic for a seed and a thread count.
/// Precondition: 0 < clusters <= points.rows().
row_matrix kmeans(const row_matrix& points, const kmeans_options& o);

/// For each row of `points`, the row of `centroids` nearest to it (squared L2; ties to the
/// smaller row).
std::vector<uint32_t> nearest_centroids(const row_matrix& points, const row_matrix& centroids,
                                        uint32_t threads = 1);

} // namespace darcy::compute::mips
