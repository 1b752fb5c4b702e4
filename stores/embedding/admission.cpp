#include "stores/embedding/admission.hpp"

#include <algorithm>
#include <cmath>

#include "messages/error.hpp"

namespace darcy::stores {

caf::error validate(const admission_config& cfg) {
  if (cfg.kind == admission_kind::none)
    return {};
  if (cfg.min_count == 0)
    return make_error(errc::invalid_config, "admission min_count must be >= 1");
  if (cfg.kind == admission_kind::bloom) {
    if (!(cfg.fp_rate > 0 && cfg.fp_rate < 1) || cfg.capacity == 0)
      return make_error(errc::invalid_config,
                        "bloom admission needs capacity > 0 and fp_rate in (0, 1)");
    if (cfg.min_count > 255)
      return make_error(errc::invalid_config, "bloom admission counts at most 255 sightings");
  }
  return {};
}

caf::error validate(const eviction_config& cfg) {
  if (cfg.kind == eviction_kind::ttl && cfg.ttl_steps <= 0)
    return make_error(errc::invalid_config, "ttl eviction needs ttl_steps > 0");
  if ((cfg.kind == eviction_kind::lfu || cfg.kind == eviction_kind::lru) && cfg.max_rows == 0)
    return make_error(errc::invalid_config, "lfu and lru eviction need max_rows > 0");
  return {};
}

caf::expected<std::unique_ptr<admission_policy>> make_admission(const admission_config& cfg) {
  if (auto err = validate(cfg))
    return err;
  switch (cfg.kind) {
    case admission_kind::none:
      return std::unique_ptr<admission_policy>{};
    case admission_kind::frequency:
      return std::unique_ptr<admission_policy>{new frequency_admission(cfg.min_count)};
    case admission_kind::bloom:
      break;
  }
  return std::unique_ptr<admission_policy>{
    new bloom_admission(cfg.min_count, cfg.capacity, cfg.fp_rate)};
}

bool frequency_admission::admit(std::string_view key, uint64_t) {
  if (min_count_ <= 1)
    return true;
  auto [it, fresh] = counts_.try_emplace(std::string{key}, 0);
  return ++it->second >= min_count_;
}

void frequency_admission::admitted(std::string_view key) {
  counts_.erase(std::string{key});
}

uint64_t frequency_admission::bytes() const {
  uint64_t total = counts_.bucket_count() * sizeof(void*);
  for (auto& [key, count] : counts_)
    total += key.capacity() + sizeof(std::pair<const std::string, uint32_t>) + 2 * sizeof(void*);
  return total;
}

bloom_admission::bloom_admission(uint32_t min_count, uint64_t capacity, double fp_rate)
  : min_count_(min_count) {
  constexpr double ln2 = 0.6931471805599453;
  auto m = std::ceil(-static_cast<double>(capacity) * std::log(fp_rate) / (ln2 * ln2));
  counters_.assign(static_cast<size_t>(std::max(64.0, m)), 0);
  hashes_ = std::max<size_t>(1, static_cast<size_t>(std::lround(m / capacity * ln2)));
}

bool bloom_admission::admit(std::string_view, uint64_t hash) {
  // Double hashing: position i is h1 + i * h2 (Kirsch and Mitzenmacher).
  uint64_t h1 = hash & 0xffffffffULL;
  uint64_t h2 = (hash >> 32) | 1;
  auto m = counters_.size();
  uint8_t low = 255;
  for (size_t i = 0; i < hashes_; ++i)
    low = std::min(low, counters_[(h1 + i * h2) % m]);
  if (low < 255) {
    for (size_t i = 0; i < hashes_; ++i) {
      auto& c = counters_[(h1 + i * h2) % m];
      if (c == low)
        ++c;
    }
    ++low;
  }
  return low >= min_count_;
}

} // namespace darcy::stores
