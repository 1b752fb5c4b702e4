// Admission policies: which keys deserve a trainable row. A key that is not admitted reads its
// initial vector and its gradients are dropped, so a long tail of rare keys costs no rows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <caf/expected.hpp>

#include "messages/embedding/embedding_config.hpp"

namespace darcy::stores {

class admission_policy {
public:
  virtual ~admission_policy() = default;

  /// Records one sighting of a key that has no row yet; true when it may get one now.
  virtual bool admit(std::string_view key, uint64_t hash) = 0;

  /// Forgets the key's count once it has a row (exact policies free memory here).
  virtual void admitted(std::string_view key) = 0;

  virtual uint64_t bytes() const = 0;
};

/// Fails with errc::invalid_config: min_count 0, fp_rate outside (0, 1), capacity 0.
caf::error validate(const admission_config& cfg);

/// Fails with errc::invalid_config: ttl without ttl_steps, lfu or lru without max_rows.
caf::error validate(const eviction_config& cfg);

/// The policy for `cfg` (validated first); nullptr for admission_kind::none.
caf::expected<std::unique_ptr<admission_policy>> make_admission(const admission_config& cfg);

/// Exact sighting counts for keys without a row.
class frequency_admission : public admission_policy {
public:
  explicit frequency_admission(uint32_t min_count) : min_count_(min_count) {}
  bool admit(std::string_view key, uint64_t hash) override;
  void admitted(std::string_view key) override;
  uint64_t bytes() const override;

private:
  uint32_t min_count_;
  std::unordered_map<std::string, uint32_t> counts_;
};

/// A counting Bloom filter with saturating 8-bit counters and conservative update: a sighting
/// raises only the counters at the current minimum. A key is admitted when its minimum reaches
/// min_count; keys never seen that often are admitted with probability about fp_rate while the
/// filter holds at most `capacity` distinct keys (beyond that the rate rises).
class bloom_admission : public admission_policy {
public:
  bloom_admission(uint32_t min_count, uint64_t capacity, double fp_rate);
  bool admit(std::string_view key, uint64_t hash) override;
  void admitted(std::string_view) override {}
  uint64_t bytes() const override { return counters_.size(); }
  size_t hash_count() const { return hashes_; }

private:
  uint32_t min_count_;
  size_t hashes_;
  std::vector<uint8_t> counters_;
};

} // namespace darcy::stores
