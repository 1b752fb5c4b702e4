#include "compute/mips/ivf_pq_index.hpp"

#include <cmath>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "compute/mips/exact_index.hpp"

namespace darcy::compute::mips {
namespace {

// MIPS-shaped data: Gaussian directions, log-normal lengths.
row_matrix factors(Eigen::Index rows, Eigen::Index dim, uint64_t seed, float norm_sigma) {
  std::mt19937_64 rng{seed};
  std::normal_distribution<float> gauss;
  row_matrix m(rows, dim);
  for (Eigen::Index r = 0; r < rows; ++r) {
    for (Eigen::Index c = 0; c < dim; ++c)
      m(r, c) = gauss(rng);
    m.row(r) *= std::exp(norm_sigma * gauss(rng));
  }
  return m;
}

// Embedding-shaped data: items around 64 topics (as trained factors are), with log-normal
// lengths; queries near items.
row_matrix topical(Eigen::Index rows, Eigen::Index dim, uint64_t seed) {
  auto topics = factors(64, dim, 100, 0.0f);
  auto noise = factors(rows, dim, seed, 0.0f);
  std::mt19937_64 rng{seed};
  std::normal_distribution<float> gauss;
  row_matrix m(rows, dim);
  for (Eigen::Index r = 0; r < rows; ++r)
    m.row(r) = (2 * topics.row(static_cast<Eigen::Index>(rng() % 64)) + noise.row(r)) *
               std::exp(0.5f * gauss(rng));
  return m;
}

TEST(ivf_pq_index, meets_its_recall_on_a_fixed_seed) {
  auto items = topical(20000, 32, 1);
  auto queries = topical(200, 32, 2);
  auto exact = exact_index::make(items);
  auto truth = exact->search(queries, 10);
  ASSERT_TRUE(truth);
  // Plain lists probed by score and bound, and norm-augmented lists probed by the augmented
  // distance, as FAISS's IVF over augmented vectors does.
  for (bool augmented : {false, true}) {
    SCOPED_TRACE(augmented ? "augmented lists" : "plain lists");
    auto index = ivf_pq_index::build(
      items, {}, {.lists = 100, .seed = 3, .threads = 2, .augmented_lists = augmented});
    ASSERT_TRUE(index) << render(index.error());
    EXPECT_EQ(index->lists(), 100u);
    float weight = augmented ? 1.0f : 0.0f;
    auto found = index->search(
      queries, 10, {.probes = 10, .distance_weight = weight, .rerank = 100, .threads = 2});
    ASSERT_TRUE(found) << render(found.error());
    EXPECT_GE(recall_at(*truth, *found), 0.9);
    // Probing one list of a hundred cannot find most of the true neighbours: the check bites.
    auto narrow =
      index->search(queries, 10, {.probes = 1, .distance_weight = weight, .rerank = 10});
    EXPECT_LT(recall_at(*truth, *narrow), 0.9);
  }
}

TEST(ivf_pq_index, an_exact_last_dimension_keeps_l2_search_through_augmentation_accurate) {
  // Pixel-like L2 data searched as inner products of [x, -|x|^2 / 2] and [q, 1]: the last
  // coordinate spans thousands of times the range of the others.
  auto augment = [](row_matrix m, float last) {
    row_matrix a(m.rows(), m.cols() + 1);
    a.leftCols(m.cols()) = m;
    a.col(m.cols()) = last == 0 ? (-0.5f * m.rowwise().squaredNorm()).eval()
                                : Eigen::VectorXf::Constant(m.rows(), last);
    return a;
  };
  auto items = augment((topical(20000, 32, 1).array() * 60.0f + 128.0f).matrix(), 0);
  auto queries = augment((topical(200, 32, 2).array() * 60.0f + 128.0f).matrix(), 1);
  auto truth = exact_index::make(items)->search(queries, 10);
  ASSERT_TRUE(truth);
  auto recall_of = [&](bool exact_last) {
    auto index = ivf_pq_index::build(
      items, {}, {.lists = 100, .seed = 3, .threads = 2, .exact_last_dim = exact_last});
    EXPECT_TRUE(index) << render(index.error());
    return recall_at(
      *truth, *index->search(queries, 10, {.probes = 10, .radius_weight = 0, .rerank = 300}));
  };
  EXPECT_GE(recall_of(true), 0.9);
  EXPECT_LT(recall_of(false), 0.9);
}

TEST(ivf_pq_index, anisotropic_loss_ranks_better_before_re_ranking) {
  auto items = topical(20000, 32, 1);
  auto queries = topical(200, 32, 2);
  auto truth = exact_index::make(items)->search(queries, 10);
  ASSERT_TRUE(truth);
  auto recall_of = [&](float threshold) {
    auto index = ivf_pq_index::build(
      items, {}, {.lists = 100, .anisotropic_threshold = threshold, .seed = 3, .threads = 2});
    // No re-ranking beyond k: the order is the quantized scores'.
    return recall_at(*truth, *index->search(queries, 10, {.probes = 10, .rerank = 10}));
  };
  EXPECT_GT(recall_of(0.4f), recall_of(0.0f) + 0.02);
}

TEST(ivf_pq_index, equals_exact_search_when_it_probes_and_reranks_everything) {
  auto items = factors(3000, 8, 4, 0.5f);
  std::vector<uint64_t> ids(3000);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = 1000000 + 7 * i;
  auto queries = factors(20, 8, 5, 0.0f);
  auto exact = exact_index::make(items, ids);
  auto truth = exact->search(queries, 25);
  ASSERT_TRUE(truth);
  for (bool augmented : {false, true}) {
    SCOPED_TRACE(augmented ? "augmented lists" : "plain lists");
    auto index =
      ivf_pq_index::build(items, ids, {.lists = 16, .seed = 1, .augmented_lists = augmented});
    ASSERT_TRUE(index);
    auto found = index->search(
      queries, 25, {.probes = 16, .distance_weight = augmented ? 1.0f : 0.0f, .rerank = 3000});
    ASSERT_TRUE(found);
    for (size_t q = 0; q < truth->size(); ++q)
      for (size_t i = 0; i < 25; ++i) {
        EXPECT_EQ((*found)[q][i].id, (*truth)[q][i].id) << "query " << q << " rank " << i;
        EXPECT_NEAR((*found)[q][i].score, (*truth)[q][i].score, 1e-4f);
      }
  }
}

// With everything it scans re-ranked, a search answers the exact top k of the items of the
// `probes` lists whose centroids score highest (ties to the lower list, and more lists while
// they hold fewer than k items), whether it picks few lists in one pass or many by a partial
// sort.
TEST(ivf_pq_index, scans_exactly_the_lists_whose_centroids_score_highest) {
  auto items = factors(5000, 8, 11, 0.5f);
  auto queries = factors(20, 8, 12, 0.0f);
  auto index = ivf_pq_index::build(items, {}, {.lists = 100, .seed = 3});
  ASSERT_TRUE(index);
  auto& parts = index->parts();
  row_matrix scores = queries * parts.centroids.transpose();
  for (size_t probes : {1, 3, 64, 65, 100}) {
    SCOPED_TRACE("probes " + std::to_string(probes));
    auto found = index->search(queries, 10, {.probes = probes, .radius_weight = 0, .rerank = 5000});
    ASSERT_TRUE(found);
    for (Eigen::Index q = 0; q < queries.rows(); ++q) {
      std::vector<uint32_t> lists(index->lists());
      std::iota(lists.begin(), lists.end(), 0u);
      std::stable_sort(lists.begin(), lists.end(),
                       [&](uint32_t a, uint32_t b) { return scores(q, a) > scores(q, b); });
      top_k_heap best{10};
      // Past `probes`, lists are added until they hold k items.
      size_t seen = 0;
      for (size_t i = 0; i < probes || seen < 10; ++i)
        for (auto r = parts.list_offsets[lists[i]]; r < parts.list_offsets[lists[i] + 1];
             ++r, ++seen)
          best.offer(
            {index->items().row(static_cast<Eigen::Index>(r)).dot(queries.row(q)), parts.ids[r]});
      auto expected = std::move(best).sorted();
      auto& got = (*found)[static_cast<size_t>(q)];
      ASSERT_EQ(got.size(), expected.size()) << "query " << q;
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(got[i].id, expected[i].id) << "query " << q << " rank " << i;
    }
  }
}

TEST(ivf_pq_index, answers_k_hits_when_the_probed_lists_hold_fewer) {
  auto items = factors(400, 4, 6, 0.3f);
  auto index = ivf_pq_index::build(items, {}, {.lists = 40, .seed = 2});
  ASSERT_TRUE(index);
  auto found = index->search(factors(3, 4, 7, 0.0f), 60, {.probes = 1, .rerank = 60});
  ASSERT_TRUE(found);
  for (auto& hits : *found)
    EXPECT_EQ(hits.size(), 60u);
}

TEST(ivf_pq_index, rebuilt_from_its_parts_answers_the_same) {
  auto items = factors(2000, 10, 8, 0.5f); // 10 dims of width 3: a short last subspace
  auto index = ivf_pq_index::build(items, {}, {.lists = 20, .dims_per_subspace = 3, .seed = 5});
  ASSERT_TRUE(index);
  auto copy = ivf_pq_index::from_parts(index->parts());
  ASSERT_TRUE(copy) << render(copy.error());
  auto queries = factors(10, 10, 9, 0.0f);
  ivf_pq_search_options o{.probes = 4, .rerank = 30};
  EXPECT_EQ(*index->search(queries, 5, o), *copy->search(queries, 5, o));
}

TEST(ivf_pq_index, refuses_parts_that_disagree) {
  auto index = ivf_pq_index::build(factors(500, 6, 1, 0.5f), {}, {.lists = 8});
  ASSERT_TRUE(index);
  using mutation = void (*)(ivf_pq_parts&);
  for (auto mutate : std::initializer_list<mutation>{
         [](ivf_pq_parts& p) {
           auto ids = p.ids.to_vector();
           ids.pop_back();
           p.ids = shared_array<uint64_t>{std::move(ids)};
         },
         [](ivf_pq_parts& p) {
           auto codes = p.codes.to_vector();
           codes.pop_back();
           p.codes = shared_array<uint8_t>{std::move(codes)};
         },
         [](ivf_pq_parts& p) { p.list_offsets.back() -= 1; },
         [](ivf_pq_parts& p) { std::swap(p.list_offsets[1], p.list_offsets[7]); },
         [](ivf_pq_parts& p) { p.centroids.conservativeResize(Eigen::NoChange, 5); },
         [](ivf_pq_parts& p) { p.codebooks.conservativeResize(16, Eigen::NoChange); }}) {
    auto parts = index->parts();
    mutate(parts);
    auto bad = ivf_pq_index::from_parts(std::move(parts));
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, errc::corrupt_file);
  }
}

TEST(ivf_pq_index, refuses_bad_queries_and_items) {
  auto items = factors(100, 4, 1, 0.5f);
  auto index = ivf_pq_index::build(items, {}, {.lists = 4});
  ASSERT_TRUE(index);
  row_matrix nan_query = row_matrix::Zero(1, 4);
  nan_query(0, 2) = NAN;
  struct bad_query {
    row_matrix queries;
    size_t k;
    errc code;
  };
  for (auto& x : {bad_query{row_matrix::Zero(1, 5), 1, errc::dimension_mismatch},
                  bad_query{nan_query, 1, errc::invalid_argument},
                  bad_query{row_matrix::Zero(1, 4), 0, errc::invalid_argument},
                  bad_query{row_matrix::Zero(1, 4), 101, errc::invalid_argument}}) {
    auto r = index->search(x.queries, x.k, {});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, x.code);
  }
  items(3, 1) = INFINITY;
  auto bad = ivf_pq_index::build(items, {}, {});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, errc::invalid_argument);
  EXPECT_FALSE(ivf_pq_index::build(factors(10, 4, 1, 0.5f), {1, 2}, {}));
}

} // namespace
} // namespace darcy::compute::mips
