#include "compute/ctr_synthetic.hpp"

#include <algorithm>
#include <cmath>

#include "compute/hash.hpp"

namespace darcy::compute {

namespace {

constexpr std::array<uint64_t, ctr_cat_fields> kaggle = {
  1460, 583,   10131227, 2202608, 305,  24,   12517, 633,     3,  93145, 5683,   8351593, 3194,
  27,   14992, 5461306,  10,      5652, 2173, 4,     7046547, 18, 15,    286181, 105,     142572};

// MLPerf's DLRM Terabyte counts with --max-ind-range 40000000 (187.8M ids in all).
constexpr std::array<uint64_t, ctr_cat_fields> terabyte = {
  39884406, 39043,    17289,    7420,     20263,  3,     7120, 1543, 63,
  38532951, 2953546,  403346,   10,       2208,   11938, 155,  4,    976,
  14,       39979771, 25641295, 39664984, 585935, 12972, 108,  36};

/// A uniform draw in (0, 1) from a 64-bit hash.
double unit(uint64_t h) {
  return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
}

/// A standard normal draw from a 64-bit hash (Box-Muller on its two halves' mixes).
double normal(uint64_t h) {
  double u1 = unit(mix64(h, 1)), u2 = unit(mix64(h, 2));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

/// An invertible mix of 32 bits: distinct ids of a field give distinct values.
uint32_t permute(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

/// A Zipf(s) rank in [0, n) by the inverse of the continuous law's CDF: no table, O(1).
uint64_t zipf_rank(double u, uint64_t n, double s) {
  double a = 1.0 - s;
  double x = std::pow(1.0 + u * (std::pow(static_cast<double>(n) + 1.0, a) - 1.0), 1.0 / a);
  auto r = static_cast<uint64_t>(x) - 1;
  return r < n ? r : n - 1;
}

// The teacher: per-id weights of this spread, crosses of these field pairs, and weights of
// the log-scaled integer fields.
constexpr double id_weight_stddev = 0.35;
constexpr double cross_weight_stddev = 0.5;
constexpr std::array<std::pair<size_t, size_t>, 4> crosses = {{{0, 1}, {2, 5}, {3, 8}, {10, 13}}};
// Fields missing this often (Criteo's integer fields are often empty).
constexpr double int_missing = 0.2;
constexpr double cat_missing = 0.05;

} // namespace

std::span<const uint64_t> ctr_cardinalities(ctr_profile profile) {
  return profile == ctr_profile::terabyte ? std::span<const uint64_t>{terabyte}
                                          : std::span<const uint64_t>{kaggle};
}

std::string to_string(ctr_profile p) {
  return p == ctr_profile::terabyte ? "terabyte" : "kaggle";
}

plain_error validate(const ctr_generator_options& o) {
  auto bad = [](const char* what) { return plain_error{errc::invalid_config, what}; };
  if (!(o.fresh_rate >= 0 && o.fresh_rate <= 1))
    return bad("ctr data: fresh_rate must be in [0, 1]");
  if (!(o.zipf_exponent > 0) || o.zipf_exponent == 1 || !std::isfinite(o.zipf_exponent))
    return bad("ctr data: the Zipf exponent must be positive and not 1");
  if (!(o.click_rate > 0 && o.click_rate < 1))
    return bad("ctr data: click_rate must be in (0, 1)");
  return {};
}

ctr_generator::ctr_generator(ctr_generator_options o) : options_(o) {
  for (auto n : ctr_cardinalities(o.profile))
    cardinalities_.push_back(o.max_ids == 0 ? n : std::min(n, o.max_ids));
  // The bias that gives the sample a mean probability of click_rate, by bisection (the mean
  // rises with the bias). The sample is rows far beyond any file's, so it is its own.
  constexpr uint64_t sample = 20000;
  std::vector<double> logits;
  logits.reserve(sample);
  for (uint64_t i = 0; i < sample; ++i)
    logits.push_back(logit(features(~uint64_t{0} - i)));
  double lo = -20, hi = 20;
  for (int it = 0; it < 60; ++it) {
    double mid = (lo + hi) / 2, mean = 0;
    for (auto l : logits)
      mean += 1 / (1 + std::exp(-(l + mid)));
    (mean / sample < o.click_rate ? lo : hi) = mid;
  }
  bias_ = (lo + hi) / 2;
}

ctr_synthetic_row ctr_generator::features(uint64_t index) const {
  ctr_synthetic_row r;
  auto base = mix64(options_.seed, index);
  for (size_t j = 0; j < ctr_int_fields; ++j) {
    auto h = mix64(base, 100 + j);
    r.int_present[j] = unit(h) >= int_missing;
    // Heavy-tailed counts, as Criteo's: exp of a normal, a field-dependent scale.
    if (r.int_present[j])
      r.ints[j] = static_cast<int64_t>(std::exp(1.0 + 0.25 * double(j % 5) + 1.4 * normal(h)));
  }
  for (size_t f = 0; f < ctr_cat_fields; ++f) {
    auto h = mix64(base, 200 + f);
    r.cat_present[f] = unit(mix64(h, 3)) >= cat_missing;
    if (!r.cat_present[f])
      continue;
    auto n = cardinalities_[f];
    uint64_t id = unit(mix64(h, 4)) < options_.fresh_rate
                    ? n + index // an id no other row of the stream draws
                    : zipf_rank(unit(mix64(h, 5)), n, options_.zipf_exponent);
    r.cats[f] = permute(static_cast<uint32_t>(id) ^ static_cast<uint32_t>(mix64(options_.seed, f)));
  }
  return r;
}

uint64_t ctr_generator::drift_of(size_t field) const {
  return field < ctr_cat_fields / 2 ? options_.teacher_phase * 4096 : 0;
}

double ctr_generator::logit(const ctr_synthetic_row& r) const {
  double z = 0;
  for (size_t j = 0; j < ctr_int_fields; ++j)
    if (r.int_present[j])
      z += 0.15 * normal(mix64(options_.seed ^ 0xC7, j)) *
           std::log1p(static_cast<double>(std::max<int64_t>(r.ints[j], 0)));
  for (size_t f = 0; f < ctr_cat_fields; ++f)
    if (r.cat_present[f])
      z +=
        id_weight_stddev * normal(mix64(mix64(options_.seed, 1000 + f + drift_of(f)), r.cats[f]));
  for (auto [a, b] : crosses)
    if (r.cat_present[a] && r.cat_present[b])
      z += cross_weight_stddev * normal(mix64(mix64(options_.seed, 2000 + a * 64 + b),
                                              (uint64_t{r.cats[a]} << 32) | r.cats[b]));
  return z;
}

ctr_synthetic_row ctr_generator::row(uint64_t index) const {
  auto r = features(index);
  r.probability = 1 / (1 + std::exp(-(logit(r) + bias_)));
  r.label = unit(mix64(mix64(options_.seed, index), 7)) < r.probability;
  return r;
}

} // namespace darcy::compute
