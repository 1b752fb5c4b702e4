#include "compute/synthetic_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <thread>

#include "compute/hash.hpp"
#include "compute/sampler.hpp"
#include "messages/errc.hpp"

namespace darcy::compute {

namespace {

/// Planted factor of (side, id): rank values from N(0, 1 / rank).
void planted(uint64_t seed, uint64_t side, uint64_t id, uint32_t rank, float* out) {
  std::mt19937_64 rng{mix64(mix64(seed, side), id)};
  std::normal_distribution<float> normal{0.0f, 1.0f / std::sqrt(static_cast<float>(rank))};
  for (uint32_t i = 0; i < rank; ++i)
    out[i] = normal(rng);
}

} // namespace

plain_expected<synthetic_rows> synthetic_rows::make(const synthetic_spec& spec) {
  constexpr uint64_t max_ids = std::numeric_limits<uint32_t>::max();
  if (spec.rows == 0 || spec.cols == 0 || spec.nnz < spec.rows)
    return plain_error{errc::invalid_argument,
                       "synthetic matrix: need rows > 0, cols > 0 and nnz >= rows"};
  if (spec.rows > max_ids || spec.cols > max_ids)
    return plain_error{errc::invalid_argument, "synthetic matrix: at most 2^32 - 1 rows and cols"};
  std::vector<double> weights(spec.cols);
  for (uint64_t c = 0; c < spec.cols; ++c)
    weights[c] = std::pow(static_cast<double>(c + 1), -spec.zipf_exponent);
  auto popularity = candidate_distribution::from_weights(std::move(weights));
  if (!popularity)
    return std::move(popularity.error());
  // Popularity rank -> column id by an odd multiplier coprime with cols, so the head is spread.
  uint64_t multiplier = 2654435761u % spec.cols;
  while (multiplier == 0 || std::gcd(multiplier, spec.cols) != 1)
    ++multiplier;
  auto rank = std::max<uint32_t>(spec.planted_rank, 1);
  std::vector<float> col_factors(spec.cols * rank);
  for (uint64_t c = 0; c < spec.cols; ++c)
    planted(spec.seed, 1, c, rank, &col_factors[c * rank]);
  uint64_t max_row = std::max<uint64_t>(1, 2 * spec.nnz / spec.rows - 1);
  return synthetic_rows{spec, std::move(*popularity), multiplier,
                        rank, std::move(col_factors), max_row};
}

void synthetic_rows::row(uint64_t r, std::vector<std::pair<uint32_t, float>>& out) const {
  auto size = 1 + mix64(spec_.seed ^ 0x5eed, r) % max_row_;
  std::mt19937_64 rng{mix64(spec_.seed, r)};
  std::uniform_real_distribution<float> unit{0.0f, 1.0f};
  float u[64];
  std::vector<float> wide;
  float* factor = u;
  if (rank_ > 64) {
    wide.resize(rank_);
    factor = wide.data();
  }
  planted(spec_.seed, 0, r, rank_, factor);
  out.clear();
  while (out.size() < size) {
    auto c = (popularity_.draw(rng) * multiplier_) % spec_.cols;
    float score = 0;
    for (uint32_t i = 0; i < rank_; ++i)
      score += factor[i] * col_factors_[c * rank_ + i];
    float accept = 1.0f / (1.0f + std::exp(-3.0f * score));
    if (unit(rng) < accept)
      out.emplace_back(static_cast<uint32_t>(c), 1.0f + std::floor(7.0f * accept));
  }
  std::sort(out.begin(), out.end());
  auto end =
    std::unique(out.begin(), out.end(), [](auto& a, auto& b) { return a.first == b.first; });
  out.erase(end, out.end());
}

plain_expected<csr_matrix> synthetic_matrix(const synthetic_spec& spec) {
  auto gen = synthetic_rows::make(spec);
  if (!gen)
    return std::move(gen.error());
  csr_matrix m;
  m.rows = spec.rows;
  m.cols = spec.cols;
  // Each row is drawn into its own range of the largest size it can have, then compacted.
  std::vector<uint64_t> start(spec.rows + 1, 0);
  uint64_t max_row = std::max<uint64_t>(1, 2 * spec.nnz / spec.rows - 1);
  for (uint64_t r = 0; r < spec.rows; ++r)
    start[r + 1] = start[r] + 1 + mix64(spec.seed ^ 0x5eed, r) % max_row;
  m.indices.resize(start.back());
  m.values.resize(start.back());
  std::vector<uint64_t> kept(spec.rows);
  auto fill = [&](uint64_t first, uint64_t last) {
    std::vector<std::pair<uint32_t, float>> row;
    for (uint64_t r = first; r < last; ++r) {
      gen->row(r, row);
      kept[r] = row.size();
      for (uint64_t i = 0; i < kept[r]; ++i) {
        m.indices[start[r] + i] = row[i].first;
        m.values[start[r] + i] = row[i].second;
      }
    }
  };
  auto threads = std::max<uint32_t>(spec.threads, 1);
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < threads; ++t)
    pool.emplace_back(fill, spec.rows * t / threads, spec.rows * (t + 1) / threads);
  for (auto& t : pool)
    t.join();
  // Compact the rows over the duplicates they dropped.
  m.offsets.assign(spec.rows + 1, 0);
  for (uint64_t r = 0; r < spec.rows; ++r) {
    auto to = m.offsets[r];
    if (to != start[r]) { // to < start[r]: a forward copy never overwrites what it still reads
      std::copy_n(m.indices.begin() + start[r], kept[r], m.indices.begin() + to);
      std::copy_n(m.values.begin() + start[r], kept[r], m.values.begin() + to);
    }
    m.offsets[r + 1] = to + kept[r];
  }
  m.indices.resize(m.offsets.back());
  m.values.resize(m.offsets.back());
  m.indices.shrink_to_fit();
  m.values.shrink_to_fit();
  return m;
}

} // namespace darcy::compute
