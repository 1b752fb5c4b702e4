#include "compute/sampler.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <unordered_set>

#include "messages/errc.hpp"

namespace darcy::compute {

plain_expected<candidate_distribution> candidate_distribution::make(
  sampler_kind kind, std::span<const uint64_t> frequencies, double power) {
  auto n = frequencies.size();
  if (n == 0)
    return plain_error{errc::invalid_argument, "no candidates to sample from"};
  std::vector<double> weight(n);
  switch (kind) {
    case sampler_kind::uniform:
      std::fill(weight.begin(), weight.end(), 1.0);
      break;
    case sampler_kind::log_uniform: {
      std::vector<uint64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint64_t a, uint64_t b) { return frequencies[a] > frequencies[b]; });
      for (size_t rank = 0; rank < n; ++rank)
        weight[order[rank]] = std::log((rank + 2.0) / (rank + 1.0));
      break;
    }
    case sampler_kind::unigram:
      for (size_t i = 0; i < n; ++i)
        weight[i] = std::pow(static_cast<double>(frequencies[i]), power);
      break;
  }
  return from_weights(std::move(weight));
}

plain_expected<candidate_distribution> candidate_distribution::from_weights(
  std::vector<double> weight) {
  auto n = weight.size();
  if (n == 0)
    return plain_error{errc::invalid_argument, "no candidates to sample from"};
  candidate_distribution d;
  d.total_weight_ = std::accumulate(weight.begin(), weight.end(), 0.0);
  if (!(d.total_weight_ > 0))
    return plain_error{errc::invalid_argument, "every candidate has weight 0"};
  d.prob_.resize(n);
  for (size_t i = 0; i < n; ++i)
    d.prob_[i] = weight[i] / d.total_weight_;
  // Vose's alias method.
  std::vector<double> alias_prob(n);
  d.columns_.resize(n);
  std::vector<double> scaled(n);
  std::vector<uint64_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    scaled[i] = d.prob_[i] * static_cast<double>(n);
    (scaled[i] < 1.0 ? small : large).push_back(i);
  }
  while (!small.empty() && !large.empty()) {
    auto s = small.back();
    small.pop_back();
    auto l = large.back();
    large.pop_back();
    alias_prob[s] = scaled[s];
    d.columns_[s].alias = l;
    scaled[l] = (scaled[l] + scaled[s]) - 1.0;
    (scaled[l] < 1.0 ? small : large).push_back(l);
  }
  for (auto i : large)
    alias_prob[i] = 1.0;
  for (auto i : small)
    alias_prob[i] = 1.0;
  for (size_t i = 0; i < n; ++i)
    d.columns_[i].keep = static_cast<uint64_t>(std::ldexp(std::clamp(alias_prob[i], 0.0, 1.0), 32));
  return d;
}

std::vector<double> frequency_weights(sampler_kind kind, std::span<const uint64_t> freqs,
                                      std::span<const uint64_t> counts, double power) {
  std::vector<double> result(freqs.size(), 1.0);
  if (kind == sampler_kind::unigram) {
    for (size_t i = 0; i < freqs.size(); ++i)
      result[i] = std::pow(static_cast<double>(freqs[i]), power);
  } else if (kind == sampler_kind::log_uniform) {
    // The most frequent rows take the first ranks.
    double rank = 0;
    for (size_t i = freqs.size(); i-- > 0;) {
      auto c = static_cast<double>(counts[i]);
      if (c > 0)
        result[i] = std::log((rank + c + 1) / (rank + 1)) / c;
      rank += c;
    }
  }
  return result;
}

uint32_t frequency_class(uint64_t frequency) {
  if (frequency < 8)
    return static_cast<uint32_t>(frequency);
  auto msb = static_cast<uint32_t>(63 - std::countl_zero(frequency));
  return 8 + (msb - 3) * 4 + static_cast<uint32_t>((frequency >> (msb - 2)) & 3);
}

uint64_t class_floor(uint32_t c) {
  if (c < 8)
    return c;
  auto octave = (c - 8) / 4;
  return uint64_t{4 + (c - 8) % 4} << (octave + 1);
}

uint64_t class_ceiling(uint32_t c) {
  if (c < 8)
    return c;
  return class_floor(c) + ((uint64_t{1} << ((c - 8) / 4 + 1)) - 1);
}

row_weights::row_weights(sampler_config cfg, std::span<const uint32_t> classes,
                         std::span<const uint64_t> counts)
  : cfg_(cfg) {
  if (cfg.kind != sampler_kind::log_uniform)
    return;
  std::vector<uint64_t> ordered(classes.begin(), classes.end());
  auto per_class = frequency_weights(sampler_kind::log_uniform, ordered, counts);
  class_weights_.assign(frequency_class_count, 0.0);
  for (size_t i = 0; i < classes.size(); ++i)
    class_weights_[classes[i]] = per_class[i];
}

row_weights::row_weights(sampler_config cfg, std::vector<double> class_weights)
  : cfg_(cfg), class_weights_(std::move(class_weights)) {
  if (cfg.kind == sampler_kind::log_uniform)
    class_weights_.resize(frequency_class_count, 0.0);
}

double row_weights::operator()(uint64_t frequency) const {
  switch (cfg_.kind) {
    case sampler_kind::uniform:
      return 1.0;
    case sampler_kind::log_uniform:
      return class_weights_[frequency_class(frequency)];
    case sampler_kind::unigram:
      return std::pow(static_cast<double>(frequency), cfg_.power);
  }
  return 0.0;
}

double row_weights::class_bound(uint32_t c) const {
  return (*this)(class_ceiling(c));
}

uint64_t candidate_distribution::draw(std::mt19937_64& rng) const {
  // One 64-bit draw: the high half of r * n picks the column (Lemire's multiply-shift), and
  // the low half, nearly uniform for n far below 2^64, is the fraction that keeps it.
  auto product = static_cast<unsigned __int128>(rng()) * columns_.size();
  auto index = static_cast<uint64_t>(product >> 64);
  auto fraction = static_cast<uint64_t>(product) >> 32;
  auto& c = columns_[index];
  return fraction < c.keep ? index : c.alias;
}

plain_expected<std::vector<sampled>> sample(const candidate_distribution& dist,
                                            std::span<const uint64_t> positives, size_t num_sampled,
                                            std::mt19937_64& rng) {
  std::unordered_set<uint64_t> positive_set;
  std::vector<sampled> result;
  result.reserve(positives.size() + num_sampled);
  double positive_mass = 0;
  for (auto id : positives) {
    if (id >= dist.size())
      return plain_error{errc::invalid_argument, "positive id " + std::to_string(id) +
                                                   " is outside the " +
                                                   std::to_string(dist.size()) + " candidates"};
    if (positive_set.insert(id).second)
      positive_mass += dist.prob(id);
    result.push_back({id, true, dist.prob(id)});
  }
  if (num_sampled > 0 && positive_mass >= 1.0 - 1e-12)
    return plain_error{errc::invalid_argument, "every candidate with weight is a positive"};
  while (result.size() < positives.size() + num_sampled) {
    auto id = dist.draw(rng);
    if (positive_set.count(id) == 0)
      result.push_back({id, false, dist.prob(id)});
  }
  return result;
}

} // namespace darcy::compute
