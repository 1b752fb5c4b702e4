#include "compute/mips/ivf_pq_index.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
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

plain_expected<ivf_pq_index> ivf_pq_index::build(const row_matrix& items, std::vector<uint64_t> ids,
                                                 const ivf_pq_options& o) {
  if (auto err = check_items(items, ids))
    return err;
  auto n = static_cast<size_t>(items.rows());
  auto dim = static_cast<size_t>(items.cols());
  if (n == 0 || dim == 0)
    return plain_error{errc::invalid_argument, "an ivf-pq index needs at least one item"};
  ids = ids_or_rows(std::move(ids), n);
  auto lists = o.lists > 0 ? o.lists : static_cast<size_t>(2 * std::sqrt(static_cast<double>(n)));
  lists = std::clamp<size_t>(lists, 1, n);
  auto threads = std::max<uint32_t>(o.threads, 1);
  auto sample = sample_rows(items, std::max(o.train_sample, 64 * lists), o.seed);
  ivf_pq_parts p;
  kmeans_options km{
    .clusters = lists, .iterations = o.iterations, .seed = o.seed, .threads = threads};
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
    sample_rows(residuals, std::max<size_t>(o.train_sample, 16), o.seed + 1), width, o.seed,
    threads);
  auto codes = quantizer.encode(residuals, directions,
                                anisotropic_eta(o.anisotropic_threshold, coded), threads);
  auto sub = quantizer.subspaces();
  std::vector<uint8_t> packed_lists;
  for (size_t l = 0; l < lists; ++l) {
    auto first = p.list_offsets[l], count = p.list_offsets[l + 1] - first;
    auto packed =
      pack_codes(std::span<const uint8_t>{codes}.subspan(first * sub, count * sub), count, sub);
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
  if (width == 0 || p.codebooks.rows() % 16 != 0 || sub * width < coded || sub > max_subspaces)
    return corrupt("codebooks do not match the dimension");
  size_t blocks = 0;
  for (size_t l = 0; l < lists; ++l)
    blocks += blocks_for(p.list_offsets[l + 1] - p.list_offsets[l]);
  if (p.codes.size() != blocks * sub * 16)
    return corrupt(std::to_string(p.codes.size()) + " code bytes, expected " +
                   std::to_string(blocks * sub * 16));
  return ivf_pq_index{std::move(p)};
}

namespace {

// A candidate of the approximate pass: its approximate score and its row.
struct candidate {
  float score;
  uint64_t row;
};

// By score alone: which of equal approximate scores survives a cut does not change the exact
// re-ranking's order, and a tie-break costs branches in the selection.
bool scores_higher(const candidate& a, const candidate& b) {
  return a.score > b.score;
}

// Writes to `out` the `probes` lists of highest bound, best first, ties to the lower list: the
// first `probes` of the order of all lists by (bound descending, list ascending).
void best_lists(const std::vector<float>& bounds, size_t probes, std::vector<uint32_t>& out) {
  out.clear();
  auto n = static_cast<uint32_t>(bounds.size());
  auto by_bound = [&](uint32_t a, uint32_t b) {
    return bounds[a] > bounds[b] || (bounds[a] == bounds[b] && a < b);
  };
  // Insertion keeps a few lists in a pass; past that, a partial sort is cheaper.
  if (probes > 64) {
    out.resize(n);
    std::iota(out.begin(), out.end(), 0u);
    std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(probes), out.end(),
                      by_bound);
    out.resize(probes);
    return;
  }
  // The lists kept and their bounds, best first; `worst` is the last bound once full.
  std::array<uint32_t, 65> kept;
  std::array<float, 65> kept_bounds;
  size_t size = 0;
  auto worst = -std::numeric_limits<float>::infinity();
  const auto* b = bounds.data();
  for (uint32_t l = 0; l < n; ++l) {
    // Skip 16 lists at a time while none beats the worst kept (a loop the compiler vectorizes).
    while (size == probes && l + 16 <= n) {
      bool any = false;
      for (uint32_t j = 0; j < 16; ++j)
        any |= b[l + j] > worst;
      if (any)
        break;
      l += 16;
    }
    if (l >= n)
      break;
    if (size == probes && !(b[l] > worst))
      continue;
    auto i = size == probes ? size - 1 : size++;
    // Move past the lists of lower bound only: an equal bound of a lower list stays ahead.
    for (; i > 0 && kept_bounds[i - 1] < b[l]; --i) {
      kept[i] = kept[i - 1];
      kept_bounds[i] = kept_bounds[i - 1];
    }
    kept[i] = l;
    kept_bounds[i] = b[l];
    if (size == probes)
      worst = kept_bounds[size - 1];
  }
  out.assign(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(size));
}

} // namespace

// Buffers of search_one, reused by one thread across the queries of a search call.
struct ivf_pq_index::search_scratch {
  std::vector<float> bounds;
  std::vector<uint32_t> order;
  std::vector<uint16_t> sums;
  /// The approximate candidates: at most twice the re-rank depth, cut back to the depth
  /// when full; an item scoring no higher than the last cut is not added.
  std::vector<candidate> candidates;
};

std::vector<hit> ivf_pq_index::search_one(const float* query, const float* list_scores, size_t k,
                                          const ivf_pq_search_options& o,
                                          search_scratch& scratch) const {
  auto sub = quantizer_.subspaces();
  auto table = quantize_table(quantizer_.inner_product_table({query, quantizer_.dim()}), sub);
  // Lists are probed by q.c + w |q| radius: with item norms that vary, a list whose centroid
  // scores low may still hold the best item (w = 1: a bound on its best score).
  auto weight = o.radius_weight *
                Eigen::Map<const Eigen::VectorXf>{query, static_cast<Eigen::Index>(dim())}.norm();
  auto& bounds = scratch.bounds;
  bounds.resize(lists());
  for (size_t l = 0; l < lists(); ++l)
    bounds[l] = list_scores[l] - o.distance_weight * half_distances_[l] + weight * radii_[l];
  auto probes = std::clamp<size_t>(o.probes, 1, lists());
  auto& order = scratch.order;
  best_lists(bounds, probes, order);
  auto depth = std::max(o.rerank, k);
  auto& found = scratch.candidates;
  found.clear();
  found.reserve(2 * depth);
  auto threshold = -std::numeric_limits<float>::infinity();
  auto keep_best = [&] {
    if (found.size() <= depth)
      return;
    auto last = found.begin() + static_cast<std::ptrdiff_t>(depth - 1);
    std::nth_element(found.begin(), last, found.end(), scores_higher);
    found.resize(depth);
    threshold = found.back().score;
  };
  scratch.sums.resize(blocks_for(longest_list_) * block_items);
  auto* sums = scratch.sums.data();
  size_t seen = 0;
  for (size_t i = 0; i < lists() && (i < probes || seen < k); ++i) {
    if (i == probes) // the probed lists held fewer than k items: take the rest in order
      best_lists(bounds, lists(), order);
    auto l = order[i];
    auto first = parts_.list_offsets[l], count = parts_.list_offsets[l + 1] - first;
    seen += count;
    auto blocks = block_offsets_[l + 1] - block_offsets_[l];
    scan_blocks(parts_.codes.data() + block_offsets_[l] * sub * 16, blocks, sub,
                table.entries.data(), sums);
    auto base = list_scores[l] + table.offset;
    auto last_q = parts_.exact_last_dim ? query[dim() - 1] : 0.0f;
    const auto* last = parts_.exact_last_dim ? last_residuals_.data() + first : nullptr;
    // 16 items at a time: their scores, then a look at each only when one passes (loops the
    // compiler vectorizes).
    std::array<float, 16> approx;
    for (size_t j0 = 0; j0 < count; j0 += 16) {
      auto width = std::min<size_t>(16, count - j0);
      for (size_t j = 0; j < 16; ++j)
        approx[j] = base + table.scale * static_cast<float>(sums[j0 + j]);
      if (last != nullptr)
        for (size_t j = 0; j < width; ++j)
          approx[j] += last_q * last[j0 + j];
      bool any = false;
      for (size_t j = 0; j < 16; ++j)
        any |= approx[j] > threshold;
      if (!any)
        continue;
      for (size_t j = 0; j < width; ++j)
        if (approx[j] > threshold) {
          found.push_back({approx[j], first + j0 + j});
          if (found.size() == 2 * depth)
            keep_best();
        }
    }
  }
  keep_best();
  // Exact scores of the candidates, their rows fetched a few candidates ahead.
  constexpr size_t ahead = 16;
  auto d = dim();
  const auto* rows = parts_.items.data();
  auto fetch = [&](size_t c) {
    const auto* row = rows + found[c].row * d;
    for (size_t off = 0; off < d; off += 16)
      __builtin_prefetch(row + off);
  };
  for (size_t c = 0; c < std::min(ahead, found.size()); ++c)
    fetch(c);
  top_k_heap best{k};
  Eigen::Map<const Eigen::VectorXf> q{query, static_cast<Eigen::Index>(d)};
  for (size_t c = 0; c < found.size(); ++c) {
    if (c + ahead < found.size())
      fetch(c + ahead);
    auto row = found[c].row;
    Eigen::Map<const Eigen::VectorXf> x{rows + row * d, static_cast<Eigen::Index>(d)};
    best.offer({x.dot(q), parts_.ids[row]});
  }
  return std::move(best).sorted();
}

plain_expected<std::vector<std::vector<hit>>> ivf_pq_index::search(
  const row_matrix& queries, size_t k, const ivf_pq_search_options& o) const {
  if (auto err = check_queries(queries, dim(), size(), k))
    return err;
  std::vector<std::vector<hit>> result(static_cast<size_t>(queries.rows()));
  parallel_ranges(
    result.size(), std::max<uint32_t>(o.threads, 1), [&](size_t, size_t begin, size_t end) {
      // Centroid scores of 64 queries at a time.
      constexpr size_t step = 64;
      row_matrix scores;
      search_scratch scratch;
      for (auto first = begin; first < end; first += step) {
        auto n = static_cast<Eigen::Index>(std::min(step, end - first));
        scores.noalias() =
          queries.middleRows(static_cast<Eigen::Index>(first), n) * parts_.centroids.transpose();
        for (Eigen::Index q = 0; q < n; ++q)
          result[first + static_cast<size_t>(q)] =
            search_one(queries.row(static_cast<Eigen::Index>(first) + q).data(),
                       scores.row(q).data(), k, o, scratch);
      }
    });
  return result;
}

} // namespace darcy::compute::mips
