#include "stores/embedding/sample_index.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_set>

#include "compute/hash.hpp"
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

bool sample_index::single_frequency(uint32_t cls) {
  return compute::class_floor(cls) == compute::class_ceiling(cls);
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

size_t sample_index::find(std::string_view key, uint64_t h) const {
  if (table_.empty())
    return not_found;
  auto mask = table_.size() - 1;
  auto tag = static_cast<uint32_t>(h);
  for (auto pos = tag & mask;; pos = (pos + 1) & mask) {
    auto& e = table_[pos];
    if (e.id == no_slot)
      return not_found;
    if (e.tag == tag && slots_[e.id].key == key)
      return pos;
  }
}

uint32_t sample_index::find_id(std::string_view key) const {
  auto pos = find(key, compute::hash_key(key));
  return pos == not_found ? no_slot : table_[pos].id;
}

void sample_index::grow_table() {
  std::vector<entry, huge_page_allocator<entry>> old(std::max<size_t>(64, table_.size() * 2));
  old.swap(table_);
  auto mask = table_.size() - 1;
  for (auto& e : old) {
    if (e.id == no_slot)
      continue;
    auto pos = e.tag & mask;
    while (table_[pos].id != no_slot)
      pos = (pos + 1) & mask;
    table_[pos] = e;
  }
}

void sample_index::insert_entry(uint64_t h, uint32_t id) {
  if ((size_ + 1) * 2 > table_.size())
    grow_table();
  auto mask = table_.size() - 1;
  auto tag = static_cast<uint32_t>(h);
  auto pos = tag & mask;
  while (table_[pos].id != no_slot)
    pos = (pos + 1) & mask;
  table_[pos] = {tag, id};
}

void sample_index::erase_entry(size_t pos) {
  auto mask = table_.size() - 1;
  auto hole = pos;
  for (auto next = (pos + 1) & mask; table_[next].id != no_slot; next = (next + 1) & mask) {
    // The entry at `next` may fill the hole unless its home lies cyclically in (hole, next].
    auto home = table_[next].tag & mask;
    bool stays = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
    if (!stays) {
      table_[hole] = table_[next];
      hole = next;
    }
  }
  table_[hole] = {};
}

void sample_index::set(std::string_view key, uint64_t frequency, const frequency_reader& exact) {
  auto h = compute::hash_key(key);
  if (auto pos = find(key, h); pos != not_found) {
    auto id = table_[pos].id;
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
  insert_entry(h, id);
  ++size_;
  slots_[id].key.assign(key);
  slots_[id].frequency = frequency;
  link(id, compute::frequency_class(frequency));
  unigram_weight_ += unigram(frequency);
}

void sample_index::refresh(std::string_view key, uint64_t frequency) {
  if (auto id = find_id(key); id != no_slot)
    place(id, frequency);
}

void sample_index::counted(std::string_view key, uint64_t before, uint32_t times) {
  auto after = before + times;
  unigram_weight_ += unigram(after) - unigram(before);
  auto cls = compute::frequency_class(after);
  if (cls == compute::frequency_class(before))
    return;
  if (auto id = find_id(key); id != no_slot)
    place(id, after);
}

void sample_index::remove(std::string_view key, const frequency_reader& exact) {
  auto pos = find(key, compute::hash_key(key));
  if (pos == not_found)
    return;
  auto id = table_[pos].id;
  unigram_weight_ -= unigram(exact(key, slots_[id].frequency));
  unlink(id);
  erase_entry(pos);
  slots_[id] = {};
  free_slots_.push_back(id);
  if (--size_ == 0)
    unigram_weight_ = 0;
}

void sample_index::locate(std::string_view key, const row_locator& at) {
  if (auto id = find_id(key); id != no_slot)
    slots_[id].at = at;
}

row_locator sample_index::location(std::string_view key) const {
  auto id = find_id(key);
  return id == no_slot ? row_locator{} : slots_[id].at;
}

void sample_index::find_ids(std::span<const std::string_view> keys, std::span<uint32_t> out) const {
  if (table_.empty()) {
    std::fill(out.begin(), out.end(), no_slot);
    return;
  }
  // In rounds: the home entries of a round are fetched together, then their slots.
  constexpr size_t lanes = 16;
  std::array<uint64_t, lanes> hashes{};
  auto mask = table_.size() - 1;
  for (size_t first = 0; first < keys.size(); first += lanes) {
    auto round = std::min(lanes, keys.size() - first);
    for (size_t l = 0; l < round; ++l) {
      hashes[l] = compute::hash_key(keys[first + l]);
      __builtin_prefetch(&table_[hashes[l] & mask]);
    }
    for (size_t l = 0; l < round; ++l)
      if (auto id = table_[hashes[l] & mask].id; id != no_slot)
        __builtin_prefetch(&slots_[id]);
    for (size_t l = 0; l < round; ++l) {
      auto pos = find(keys[first + l], hashes[l]);
      out[first + l] = pos == not_found ? no_slot : table_[pos].id;
    }
  }
}

void sample_index::locations(std::span<const std::string_view> keys,
                             std::span<row_locator> out) const {
  std::vector<uint32_t> ids(keys.size());
  find_ids(keys, ids);
  for (size_t k = 0; k < keys.size(); ++k)
    out[k] = ids[k] == no_slot ? row_locator{} : slots_[ids[k]].at;
}

std::optional<uint64_t> sample_index::stored_frequency(std::string_view key) const {
  auto id = find_id(key);
  if (id == no_slot)
    return std::nullopt;
  return slots_[id].frequency;
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
  std::vector<std::string_view> keys(positives.begin(), positives.end());
  std::vector<uint32_t> ids(keys.size());
  find_ids(keys, ids);
  for (size_t k = 0; k < keys.size(); ++k) {
    if (ids[k] == no_slot)
      continue;
    auto& slot = slots_[ids[k]];
    out.positives.push_back(positives[k]);
    out.positive_freqs.push_back(single_frequency(slot.cls) ? slot.frequency
                                                            : exact(keys[k], slot.frequency));
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
  // The positives this index holds, as sorted slot numbers.
  std::vector<std::string_view> positive_keys(plan.positives.begin(), plan.positives.end());
  std::vector<uint32_t> excluded(positive_keys.size());
  find_ids(positive_keys, excluded);
  std::sort(excluded.begin(), excluded.end());
  excluded.erase(std::lower_bound(excluded.begin(), excluded.end(), no_slot), excluded.end());
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
    auto id = classes_[c][below(rng, classes_[c].size())];
    if (!excluded.empty() && std::binary_search(excluded.begin(), excluded.end(), id))
      continue;
    auto& s = slots_[id];
    auto w = weights.class_bound(c);
    if (unigram) {
      auto bound = w;
      // A class of one frequency is its rows' exact weight: no read of the store.
      if (!single_frequency(c))
        w = weights(exact(s.key, s.frequency));
      if (uniform01(rng) * bound >= w)
        continue;
    }
    out.keys.emplace_back(s.key);
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
  for (auto& s : slots_) {
    if (s.cls == free_class || excluded.count(s.key) > 0)
      continue;
    auto w = weights(exact(s.key, s.frequency));
    if (w > 0) {
      keys.push_back(&s.key);
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
