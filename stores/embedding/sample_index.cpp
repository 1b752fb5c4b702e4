#include "stores/embedding/sample_index.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "messages/error.hpp"

namespace darcy::stores {

namespace {

double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

/// A uniform index below n (Lemire's multiply-shift).
size_t below(std::mt19937_64& rng, size_t n) {
  return static_cast<size_t>((static_cast<unsigned __int128>(rng()) * n) >> 64);
}

} // namespace

sample_index::sample_index(sampler_config cfg) : cfg_(cfg) {
  small_powers_.resize(4096);
  for (size_t f = 0; f < small_powers_.size(); ++f)
    small_powers_[f] = std::pow(static_cast<double>(f), cfg.power);
}

double sample_index::unigram(uint64_t frequency) const {
  return frequency < small_powers_.size() ? small_powers_[frequency]
                                          : std::pow(static_cast<double>(frequency), cfg_.power);
}

void sample_index::link(uint32_t id, uint32_t cls) {
  auto& members = classes_[cls];
  slots_[id].cls = cls;
  slots_[id].pos = static_cast<uint32_t>(members.size());
  members.push_back(id);
}

void sample_index::unlink(uint32_t id) {
  auto& s = slots_[id];
  auto& members = classes_[s.cls];
  auto last = members.back();
  members[s.pos] = last;
  slots_[last].pos = s.pos;
  members.pop_back();
}

void sample_index::place(uint32_t id, uint64_t frequency) {
  slots_[id].frequency = frequency;
  if (auto cls = compute::frequency_class(frequency); cls != slots_[id].cls) {
    unlink(id);
    link(id, cls);
  }
}

void sample_index::set(std::string_view key, uint64_t frequency, const frequency_reader& exact) {
  auto found = by_key_.find(key);
  if (found != by_key_.end()) {
    auto id = found->second;
    unigram_weight_ += unigram(frequency) - unigram(exact(key, slots_[id].frequency));
    place(id, frequency);
    return;
  }
  uint32_t id;
  if (!free_slots_.empty()) {
    id = free_slots_.back();
    free_slots_.pop_back();
  } else {
    id = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  auto node = by_key_.emplace(std::string{key}, id).first;
  slots_[id].key = &node->first;
  slots_[id].frequency = frequency;
  link(id, compute::frequency_class(frequency));
  unigram_weight_ += unigram(frequency);
}

void sample_index::refresh(std::string_view key, uint64_t frequency) {
  if (auto found = by_key_.find(key); found != by_key_.end())
    place(found->second, frequency);
}

void sample_index::counted(std::string_view key, uint64_t before, uint32_t times) {
  auto after = before + times;
  unigram_weight_ += unigram(after) - unigram(before);
  auto cls = compute::frequency_class(after);
  if (cls == compute::frequency_class(before))
    return;
  if (auto found = by_key_.find(key); found != by_key_.end())
    place(found->second, after);
}

void sample_index::remove(std::string_view key, const frequency_reader& exact) {
  auto found = by_key_.find(key);
  if (found == by_key_.end())
    return;
  auto id = found->second;
  unigram_weight_ -= unigram(exact(key, slots_[id].frequency));
  unlink(id);
  slots_[id] = {};
  free_slots_.push_back(id);
  by_key_.erase(found);
  if (by_key_.empty())
    unigram_weight_ = 0;
}

std::optional<uint64_t> sample_index::stored_frequency(std::string_view key) const {
  auto found = by_key_.find(key);
  if (found == by_key_.end())
    return std::nullopt;
  return slots_[found->second].frequency;
}

sample_stats sample_index::stats(const std::vector<std::string>& positives,
                                 const frequency_reader& exact) const {
  sample_stats out;
  out.sampler = cfg_;
  for (uint32_t c = 0; c < compute::frequency_class_count; ++c) {
    if (classes_[c].empty())
      continue;
    out.classes.push_back(c);
    out.counts.push_back(classes_[c].size());
  }
  out.weight = cfg_.kind == sampler_kind::unigram ? std::max(0.0, unigram_weight_)
                                                  : static_cast<double>(size());
  for (auto& p : positives) {
    auto found = by_key_.find(p);
    if (found == by_key_.end())
      continue;
    out.positives.push_back(p);
    out.positive_freqs.push_back(exact(p, slots_[found->second].frequency));
  }
  return out;
}

caf::expected<sample_result> sample_index::draw(const sample_plan& plan,
                                                const frequency_reader& exact) const {
  sample_result out;
  if (plan.count == 0)
    return out;
  compute::row_weights weights{plan.sampler, plan.class_weights};
  // Proposal: a class by its rows times their largest weight, then a row of it uniformly;
  // unigram accepts the row with its weight over that bound (at least (4/5)^power).
  std::vector<uint32_t> proposed;
  std::vector<double> cumulative;
  double sum = 0;
  for (uint32_t c = 0; c < compute::frequency_class_count; ++c) {
    auto p = static_cast<double>(classes_[c].size()) * weights.class_bound(c);
    if (!(p > 0))
      continue;
    sum += p;
    proposed.push_back(c);
    cumulative.push_back(sum);
  }
  std::unordered_set<std::string_view> excluded(plan.positives.begin(), plan.positives.end());
  std::mt19937_64 rng{plan.seed};
  bool unigram = plan.sampler.kind == sampler_kind::unigram;
  out.keys.reserve(plan.count);
  // Rejections past this budget mean that the positives hold nearly all the weight.
  size_t budget = size_t{64} * plan.count + 4096;
  while (sum > 0 && out.keys.size() < plan.count && budget-- > 0) {
    auto i = static_cast<size_t>(
      std::upper_bound(cumulative.begin(), cumulative.end(), uniform01(rng) * sum) -
      cumulative.begin());
    auto c = proposed[std::min(i, proposed.size() - 1)];
    auto& s = slots_[classes_[c][below(rng, classes_[c].size())]];
    if (excluded.count(*s.key) > 0)
      continue;
    auto w = weights.class_bound(c);
    if (unigram) {
      auto bound = w;
      // A class of one frequency (below 8) is its rows' exact weight: no read of the store.
      if (compute::class_floor(c) != compute::class_ceiling(c))
        w = weights(exact(*s.key, s.frequency));
      if (uniform01(rng) * bound >= w)
        continue;
    }
    out.keys.emplace_back(*s.key);
    out.is_positive.push_back(0);
    out.probs.push_back(w / plan.total_weight);
  }
  if (out.keys.size() < plan.count)
    if (auto err = draw_exhaustive(plan, weights, exact, plan.count - out.keys.size(), rng, out))
      return err;
  return out;
}

caf::error sample_index::draw_exhaustive(const sample_plan& plan,
                                         const compute::row_weights& weights,
                                         const frequency_reader& exact, size_t count,
                                         std::mt19937_64& rng, sample_result& out) const {
  std::unordered_set<std::string_view> excluded(plan.positives.begin(), plan.positives.end());
  std::vector<const std::string*> keys;
  std::vector<double> row_weight;
  for (auto& [key, id] : by_key_) {
    if (excluded.count(key) > 0)
      continue;
    auto w = weights(exact(key, slots_[id].frequency));
    if (w > 0) {
      keys.push_back(&key);
      row_weight.push_back(w);
    }
  }
  auto dist = compute::candidate_distribution::from_weights(row_weight);
  if (!dist)
    return make_error(errc::invalid_argument,
                      "no candidate for " + std::to_string(plan.count) + " samples");
  for (size_t n = 0; n < count; ++n) {
    auto id = dist->draw(rng);
    out.keys.push_back(*keys[id]);
    out.is_positive.push_back(0);
    out.probs.push_back(row_weight[id] / plan.total_weight);
  }
  return {};
}

} // namespace darcy::stores
