// An embedding store in front of another that records which keys' rows changed since the last
// take(): every key a lookup or update names (a lookup creates a row or counts it), every row
// imported or removed, and every row the store below evicts. Incremental checkpoints (and syncs)
// write only those rows. The set is bounded: past `limit` keys it is dropped and marked overflowed,
// and its reader then needs every row instead.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "stores/embedding/forwarding_store.hpp"

namespace darcy::stores {

/// The keys changed since some point, or `overflowed` when there were more than the limit.
struct changed_keys {
  std::vector<std::string> keys;
  bool overflowed = false;
};

class tracked_store : public forwarding_store {
public:
  /// `limit` must be positive.
  tracked_store(std::unique_ptr<embedding_store> inner, size_t limit);
  ~tracked_store() override;

  /// The keys changed since the last take (or since construction), in no order; then starts
  /// afresh.
  changed_keys take();
  /// Adds the keys of an earlier take back (its reader did not keep them).
  void put_back(const changed_keys& earlier);
  /// The store below, for the caller that stops tracking; this store must not be used after.
  std::unique_ptr<embedding_store> release();

  using embedding_store::lookup;
  using embedding_store::update;
  caf::error lookup(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<float> out) override;
  caf::error update(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<const float> grads, int64_t step) override;
  caf::error import_row(const row_record& row) override;
  caf::error remove_rows(std::span<const std::string_view> keys) override;

private:
  void note(std::string_view key);

  size_t limit_;
  /// Hashes std::string and std::string_view alike, so that note() finds a key without a copy.
  struct key_hash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const noexcept {
      return std::hash<std::string_view>{}(key);
    }
  };
  std::unordered_set<std::string, key_hash, std::equal_to<>> changed_;
  bool overflowed_ = false;
};

} // namespace darcy::stores
