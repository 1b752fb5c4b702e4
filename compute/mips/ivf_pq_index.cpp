#include "compute/mips/ivf_pq_index.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "compute/mips/exact_index.hpp"
#include "compute/mips/fast_scan.hpp"
#include "compute/mips/kmeans.hpp"
#include "compute/parallel.hpp"
#include "compute/sampler.hpp"

namespace darcy::compute::mips {

namespace {

// fast_scan sums 16-bit values of at most 255 each.
constexpr size_t max_subspaces = 256;

// `count` rows of `m` chosen by `seed`, in row order (all rows when count >= rows).
row_matrix sample_rows(const row_matrix& m, size_t count, uint64_t seed) {
  auto n = static_cast<size_t>(m.rows());
  if (count >= n)
    return m;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng{seed};
  shuffle_prefix(order, count, rng);
  order.resize(count);
  std::sort(order.begin(), order.end());
  row_matrix s(static_cast<Eigen::Index>(count), m.cols());
  for (size_t i = 0; i < count; ++i)
    s.row(static_cast<Eigen::Index>(i)) = m.row(static_cast<Eigen::Index>(order[i]));
  return s;
}

// The longest row's norm.
float longest_norm(Eigen::Ref<const row_matrix> m) {
  return m.rows() == 0 ? 0.0f : m.rowwise().norm().maxCoeff();
}

// The augmented coordinate sqrt(M^2 - |x|^2) less M: -|x|^2 / (sqrt(M^2 - |x|^2) + M). The
// shift leaves L2 distances between augmented rows as they are; without it, M^2 swamps the
// |x|^2 of short rows in float, and every short row looks alike.
double shifted_coordinate(double squared_norm, double longest) {
  auto rest = std::max(0.0, longest * longest - squared_norm);
  return longest == 0 ? 0.0 : -squared_norm / (std::sqrt(rest) + longest);
}

// [x, shifted_coordinate(x)] for every row x of m.
row_matrix augmented(const row_matrix& m, float longest) {
  row_matrix a(m.rows(), m.cols() + 1);
  a.leftCols(m.cols()) = m;
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    a(r, m.cols()) = static_cast<float>(shifted_coordinate(m.row(r).squaredNorm(), longest));
  return a;
}

plain_error corrupt(const std::string& what) {
  return {errc::corrupt_file, "ivf-pq index: " + what};
}

} // namespace

ivf_pq_index::ivf_pq_index(ivf_pq_parts parts)
  : parts_(std::move(parts)),
    quantizer_(static_cast<size_t>(parts_.centroids.cols()) - (parts_.exact_last_dim ? 1 : 0),
               parts_.codebooks) {
  block_offsets_.assign(lists() + 1, 0);
  for (size_t l = 0; l < lists(); ++l) {
    auto n = parts_.list_offsets[l + 1] - parts_.list_offsets[l];
    block_offsets_[l + 1] = block_offsets_[l] + blocks_for(n);
    longest_list_ = std::max<size_t>(longest_list_, n);
  }
  radii_.assign(lists(), 0.0f);
  half_distances_.assign(lists(), 0.0f);
  auto all = items();
  auto longest = longest_norm(all);
  for (size_t l = 0; l < lists(); ++l) {
    auto c = parts_.centroids.row(static_cast<Eigen::Index>(l));
    double shifted_sum = 0;
    for (auto r = parts_.list_offsets[l]; r < parts_.list_offsets[l + 1]; ++r) {
      auto x = all.row(static_cast<Eigen::Index>(r));
      radii_[l] = std::max(radii_[l], (x - c).norm());
      shifted_sum += shifted_coordinate(x.squaredNorm(), longest);
    }
    auto count = parts_.list_offsets[l + 1] - parts_.list_offsets[l];
    auto s = count == 0 ? 0.0 : shifted_sum / static_cast<double>(count);
    // (|c|^2 + a^2) / 2 with a = M + s, less the M^2 / 2 that every list shares.
    half_distances_[l] = static_cast<float>((c.squaredNorm() + 2 * longest * s + s * s) / 2);
  }
  if (parts_.exact_last_dim) {
    auto last = all.cols() - 1;
    last_residuals_.resize(size());
    for (size_t l = 0; l < lists(); ++l)
      for (auto r = parts_.list_offsets[l]; r < parts_.list_offsets[l + 1]; ++r)
        last_residuals_[r] = all(static_cast<Eigen::Index>(r), last) -
                             parts_.centroids(static_cast<Eigen::Index>(l), last);
  }
}

plain_expected<ivf_pq_index> ivf_pq_index::build(const row_matrix& items,
                                                 std::vector<uint64_t> ids,
                                                 const ivf_pq_options& o) {
  if (auto err = check_items(items, ids))
    return err;
  auto n = static_cast<size_t>(items.rows());
  auto dim = static_cast<size_t>(items.cols());
  if (n == 0 || dim == 0)
    return plain_error{errc::invalid_argument, "an ivf-pq index needs at least one item"};
  ids = ids_or_rows(std::move(ids), n);
  auto lists = o.lists > 0 ? o.lists
                           : static_cast<size_t>(2 * std::sqrt(static_cast<double>(n)));
  lists = std::clamp<size_t>(lists, 1, n);
  auto threads = std::max<uint32_t>(o.threads, 1);
  auto sample = sample_rows(items, std::max(o.train_sample, 64 * lists), o.seed);
  ivf_pq_parts p;
  kmeans_options km{.clusters = lists, .iterations = o.iterations, .seed = o.seed,
                    .threads = threads};
  std::vector<uint32_t> list_of;
  if (o.exact_last_dim && items.cols() > 1) {
    // Lists from the other dimensions; the last, scored exactly, must not decide them (for
    // [x, -|x|^2 / 2] it would sort items by norm alone). A centroid's last coordinate is the
    // mean of its items'.
    auto head = items.cols() - 1;
    row_matrix head_sample = sample.leftCols(head);
    auto centroids = kmeans(head_sample, km);
    row_matrix head_items = items.leftCols(head);
    list_of = nearest_centroids(head_items, centroids, threads);
    p.centroids = row_matrix::Zero(centroids.rows(), items.cols());
    p.centroids.leftCols(head) = centroids;
    std::vector<size_t> members(lists, 0);
    for (size_t r = 0; r < n; ++r) {
      p.centroids(list_of[r], head) += items(static_cast<Eigen::Index>(r), head);
      ++members[list_of[r]];
    }
    for (size_t l = 0; l < lists; ++l)
      if (members[l] > 0)
        p.centroids(static_cast<Eigen::Index>(l), head) /= static_cast<float>(members[l]);
  } else if (o.augmented_lists) {
    auto longest = longest_norm(items);
    auto centroids = kmeans(augmented(sample, longest), km);
    list_of = nearest_centroids(augmented(items, longest), centroids, threads);
    p.centroids = centroids.leftCols(items.cols());
  } else {
    p.centroids = kmeans(sample, km);
    list_of = nearest_centroids(items, p.centroids, threads);
  }
  // Items in list order, stable within a list.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return list_of[a] < list_of[b]; });
  p.list_offsets.assign(lists + 1, 0);
  for (auto l : list_of)
    ++p.list_offsets[l + 1];
  std::partial_sum(p.list_offsets.begin(), p.list_offsets.end(), p.list_offsets.begin());
  row_matrix sorted(items.rows(), items.cols()), residuals(items.rows(), items.cols());
  std::vector<uint64_t> sorted_ids(n);
  for (size_t r = 0; r < n; ++r) {
    auto from = static_cast<Eigen::Index>(order[r]), to = static_cast<Eigen::Index>(r);
    sorted.row(to) = items.row(from);
    sorted_ids[r] = ids[order[r]];
    residuals.row(to) = items.row(from) - p.centroids.row(list_of[order[r]]);
  }
  // With exact_last_dim the codes cover the other dimensions only.
  auto coded = o.exact_last_dim && dim > 1 ? dim - 1 : dim;
  p.exact_last_dim = coded < dim;
  auto coded_cols = static_cast<Eigen::Index>(coded);
  row_matrix coded_sorted; // the directions of the anisotropic loss, when they differ from sorted
  if (p.exact_last_dim) {
    residuals = residuals.leftCols(coded_cols).eval();
    coded_sorted = sorted.leftCols(coded_cols);
  }
  const auto& directions = p.exact_last_dim ? coded_sorted : sorted;
  auto width = std::max(o.dims_per_subspace, (coded + max_subspaces - 1) / max_subspaces);
  auto quantizer = product_quantizer::train(
    sample_rows(residuals, std::max<size_t>(o.train_sample, 16), o.seed + 1), width,
    o.seed, threads);
  auto codes = quantizer.encode(residuals, directions,
                                anisotropic_eta(o.anisotropic_threshold, coded), threads);
  auto sub = quantizer.subspaces();
  std::vector<uint8_t> packed_lists;
  for (size_t l = 0; l < lists; ++l) {
    auto first = p.list_offsets[l], count = p.list_offsets[l + 1] - first;
    auto packed = pack_codes(std::span<const uint8_t>{codes}.subspan(first * sub, count * sub),
                             count, sub);
    packed_lists.insert(packed_lists.end(), packed.begin(), packed.end());
  }
  p.codes = shared_array<uint8_t>{std::move(packed_lists)};
  p.items = shared_array<float>{std::vector<float>(sorted.data(), sorted.data() + sorted.size())};
  p.ids = shared_array<uint64_t>{std::move(sorted_ids)};
  p.codebooks = quantizer.codebooks();
  return ivf_pq_index{std::move(p)};
}

plain_expected<ivf_pq_index> ivf_pq_index::from_parts(ivf_pq_parts p) {
  auto lists = static_cast<size_t>(p.centroids.rows());
  auto n = p.ids.size();
  auto dim = static_cast<size_t>(p.centroids.cols());
  if (lists == 0 || dim == 0 || p.items.size() != n * dim)
    return corrupt(std::to_string(p.items.size()) + " item values for " + std::to_string(n) +
                   " ids of dim " + std::to_string(dim));
  if (p.list_offsets.size() != lists + 1 || p.list_offsets.front() != 0 ||
      p.list_offsets.back() != n || !std::is_sorted(p.list_offsets.begin(), p.list_offsets.end()))
    return corrupt("list offsets do not cover the items");
  auto width = static_cast<size_t>(p.codebooks.cols());
  auto sub = static_cast<size_t>(p.codebooks.rows()) / codes_per_subspace;
  auto coded = p.exact_last_dim ? dim - 1 : dim;
  if (width == 0 || p.codebooks.rows() % 16 != 0 || sub * width < coded ||
      sub > max_subspaces)
    return corrupt("codebooks do not match the dimension");
  size_t blocks = 0;
  for (size_t l = 0; l < lists; ++l)
    blocks += blocks_for(p.list_offsets[l + 1] - p.list_offsets[l]);
  if (p.codes.size() != blocks * sub * 16)
    return corrupt(std::to_string(p.codes.size()) + " code bytes, expected " +
                   std::to_string(blocks * sub * 16));
  return ivf_pq_index{std::move(p)};
}

std::vector<hit> ivf_pq_index::search_one(const float* query, const float* list_scores, size_t k,
                                          const ivf_pq_search_options& o) const {
  auto sub = quantizer_.subspaces();
  auto table = quantize_table(
    quantizer_.inner_product_table({query, quantizer_.dim()}), sub);
  std::vector<uint32_t> order(lists());
  std::iota(order.begin(), order.end(), 0u);
  // Lists are probed by q.c + w |q| radius: with item norms that vary, a list whose centroid
  // scores low may still hold the best item (w = 1: a bound on its best score).
  auto weight = o.radius_weight *
                Eigen::Map<const Eigen::VectorXf>{query, static_cast<Eigen::Index>(dim())}.norm();
  std::vector<float> bounds(lists());
  for (size_t l = 0; l < lists(); ++l)
    bounds[l] = list_scores[l] - o.distance_weight * half_distances_[l] + weight * radii_[l];
  auto by_score = [&](uint32_t a, uint32_t b) {
    return bounds[a] > bounds[b] || (bounds[a] == bounds[b] && a < b);
  };
  auto probes = std::clamp<size_t>(o.probes, 1, lists());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(probes),
                    order.end(), by_score);
  top_k_heap candidates{std::max(o.rerank, k)};
  std::vector<uint16_t> sums(blocks_for(longest_list_) * block_items);
  size_t seen = 0;
  for (size_t i = 0; i < lists() && (i < probes || seen < k); ++i) {
    if (i == probes) // the probed lists held fewer than k items: take the rest in order
      std::sort(order.begin() + static_cast<std::ptrdiff_t>(i), order.end(), by_score);
    auto l = order[i];
    auto first = parts_.list_offsets[l], count = parts_.list_offsets[l + 1] - first;
    seen += count;
    auto blocks = block_offsets_[l + 1] - block_offsets_[l];
    scan_blocks(parts_.codes.data() + block_offsets_[l] * sub * 16, blocks, sub,
                table.entries.data(), sums.data());
    auto base = list_scores[l] + table.offset;
    for (size_t j = 0; j < count; ++j) {
      auto approx = base + table.scale * static_cast<float>(sums[j]);
      if (parts_.exact_last_dim)
        approx += query[dim() - 1] * last_residuals_[first + j];
      if (!candidates.full() || approx > candidates.worst().score)
        candidates.offer({approx, first + j});
    }
  }
  top_k_heap best{k};
  Eigen::Map<const Eigen::RowVectorXf> q{query, static_cast<Eigen::Index>(dim())};
  auto all = items();
  for (auto& c : std::move(candidates).sorted())
    best.offer({all.row(static_cast<Eigen::Index>(c.id)).dot(q), parts_.ids[c.id]});
  return std::move(best).sorted();
}

plain_expected<std::vector<std::vector<hit>>>
ivf_pq_index::search(const row_matrix& queries, size_t k, const ivf_pq_search_options& o) const {
  if (auto err = check_queries(queries, dim(), size(), k))
    return err;
  std::vector<std::vector<hit>> result(static_cast<size_t>(queries.rows()));
  parallel_ranges(result.size(), std::max<uint32_t>(o.threads, 1),
                  [&](size_t, size_t begin, size_t end) {
    // Centroid scores of 64 queries at a time.
    constexpr size_t step = 64;
    row_matrix scores;
    for (auto first = begin; first < end; first += step) {
      auto n = static_cast<Eigen::Index>(std::min(step, end - first));
      scores.noalias() =
        queries.middleRows(static_cast<Eigen::Index>(first), n) * parts_.centroids.transpose();
      for (Eigen::Index q = 0; q < n; ++q)
        result[first + static_cast<size_t>(q)] =
          search_one(queries.row(static_cast<Eigen::Index>(first) + q).data(),
                     scores.row(q).data(), k, o);
    }
  });
  return result;
}

} // namespace darcy::compute::mips
