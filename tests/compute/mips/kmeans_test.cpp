#include "compute/mips/kmeans.hpp"

#include <algorithm>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace darcy::compute::mips {
namespace {

// `per` points around each of `centres` (rows), within +-0.1 on every axis.
row_matrix clustered(const row_matrix& centres, int per, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::uniform_real_distribution<float> jitter{-0.1f, 0.1f};
  row_matrix m(centres.rows() * per, centres.cols());
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    for (Eigen::Index c = 0; c < m.cols(); ++c)
      m(r, c) = centres(r % centres.rows(), c) + jitter(rng);
  return m;
}

TEST(kmeans, finds_well_separated_clusters_for_every_thread_count) {
  row_matrix centres(4, 2);
  centres << 0, 0, 10, 0, 0, 10, 10, 10;
  auto points = clustered(centres, 50, 1);
  for (uint32_t threads : {1u, 2u}) {
    auto found = kmeans(points, {.clusters = 4, .iterations = 10, .seed = 3, .threads = threads});
    ASSERT_EQ(found.rows(), 4);
    for (Eigen::Index c = 0; c < centres.rows(); ++c) {
      float nearest = 1e9f;
      for (Eigen::Index f = 0; f < found.rows(); ++f)
        nearest = std::min(nearest, (found.row(f) - centres.row(c)).norm());
      EXPECT_LT(nearest, 0.05f) << "centre " << c << ", threads " << threads;
    }
  }
}

TEST(kmeans, is_deterministic_for_a_seed_and_thread_count) {
  row_matrix centres = row_matrix::Random(8, 5) * 10;
  auto points = clustered(centres, 30, 2);
  kmeans_options o{.clusters = 8, .iterations = 5, .seed = 9, .threads = 2};
  EXPECT_EQ(kmeans(points, o), kmeans(points, o));
}

TEST(kmeans, restarts_an_emptied_cluster_at_a_distinct_point) {
  // Ten copies of one point and one outlier: two starting centroids may both sit on the
  // copies, and one of them then empties; it must move to the outlier.
  row_matrix points = row_matrix::Zero(11, 2);
  points(10, 0) = 100;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    auto found = kmeans(points, {.clusters = 2, .iterations = 3, .seed = seed});
    std::set<float> xs{found(0, 0), found(1, 0)};
    EXPECT_EQ(xs, (std::set<float>{0.0f, 100.0f})) << "seed " << seed;
  }
}

TEST(nearest_centroids, picks_the_nearest_row_and_the_smaller_row_on_a_tie) {
  row_matrix centroids(3, 1);
  centroids << 0, 2, 4;
  row_matrix points(5, 1);
  points << -1, 1, 2.9f, 3, 100;
  EXPECT_EQ(nearest_centroids(points, centroids, 2), (std::vector<uint32_t>{0, 0, 1, 1, 2}));
}

} // namespace
} // namespace darcy::compute::mips
