#include "compute/mips/kmeans.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include "compute/parallel.hpp"
#include "compute/sampler.hpp"

namespace darcy::compute::mips {

namespace {

// Points scored against the centroids at once: a 1024 x clusters block of scores.
constexpr Eigen::Index chunk_rows = 1024;

// nearest[i] and the squared distance to it, for points [begin, end).
void assign_range(const row_matrix& points, const row_matrix& centroids,
                  const Eigen::VectorXf& half_norms, size_t begin, size_t end,
                  std::vector<uint32_t>& nearest, std::vector<float>* distance) {
  row_matrix scores;
  for (auto first = static_cast<Eigen::Index>(begin); first < static_cast<Eigen::Index>(end);
       first += chunk_rows) {
    auto n = std::min(chunk_rows, static_cast<Eigen::Index>(end) - first);
    // |p - c|^2 = |p|^2 - 2 (p.c - |c|^2 / 2): the nearest centroid has the largest p.c - |c|^2/2.
    scores.noalias() = points.middleRows(first, n) * centroids.transpose();
    scores.rowwise() -= half_norms.transpose();
    for (Eigen::Index r = 0; r < n; ++r) {
      Eigen::Index best = 0;
      auto top = scores.row(r).maxCoeff(&best);
      nearest[static_cast<size_t>(first + r)] = static_cast<uint32_t>(best);
      if (distance != nullptr)
        (*distance)[static_cast<size_t>(first + r)] = points.row(first + r).squaredNorm() - 2 * top;
    }
  }
}

std::vector<uint32_t> assign(const row_matrix& points, const row_matrix& centroids,
                             uint32_t threads, std::vector<float>* distance) {
  Eigen::VectorXf half_norms = 0.5f * centroids.rowwise().squaredNorm();
  std::vector<uint32_t> nearest(static_cast<size_t>(points.rows()));
  parallel_ranges(nearest.size(), threads, [&](size_t, size_t begin, size_t end) {
    assign_range(points, centroids, half_norms, begin, end, nearest, distance);
  });
  return nearest;
}

} // namespace

std::vector<uint32_t> nearest_centroids(const row_matrix& points, const row_matrix& centroids,
                                        uint32_t threads) {
  return assign(points, centroids, threads, nullptr);
}

row_matrix kmeans(const row_matrix& points, const kmeans_options& o) {
  auto n = static_cast<size_t>(points.rows());
  auto k = std::min(o.clusters, n);
  std::mt19937_64 rng{o.seed};
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  shuffle_prefix(order, k, rng); // the first k entries are k distinct points
  row_matrix centroids(static_cast<Eigen::Index>(k), points.cols());
  for (size_t c = 0; c < k; ++c)
    centroids.row(static_cast<Eigen::Index>(c)) = points.row(static_cast<Eigen::Index>(order[c]));
  std::vector<float> distance(n);
  for (uint32_t it = 0; it < o.iterations; ++it) {
    auto nearest = assign(points, centroids, o.threads, &distance);
    Eigen::MatrixXd sums = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(k), points.cols());
    std::vector<size_t> counts(k, 0);
    for (size_t i = 0; i < n; ++i) {
      sums.row(nearest[i]) += points.row(static_cast<Eigen::Index>(i)).cast<double>();
      ++counts[nearest[i]];
    }
    for (size_t c = 0; c < k; ++c) {
      auto row = static_cast<Eigen::Index>(c);
      if (counts[c] > 0) {
        centroids.row(row) = (sums.row(row) / static_cast<double>(counts[c])).cast<float>();
        continue;
      }
      auto far =
        static_cast<size_t>(std::max_element(distance.begin(), distance.end()) - distance.begin());
      centroids.row(row) = points.row(static_cast<Eigen::Index>(far));
      distance[far] = -1; // not chosen again this iteration
    }
  }
  return centroids;
}

} // namespace darcy::compute::mips
