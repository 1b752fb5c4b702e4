// The embedding store interface: rows addressed by raw string keys, no dictionary. A store owns
// the rows of one embedding on one shard, with their optimizer slots and sampling metadata.
// Stores are not thread-safe: one shard actor owns each store.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include <caf/error.hpp>

#include "messages/embedding.hpp"

namespace darcy::stores {

using store_stats = embedding_stats;


class embedding_store {
public:
  virtual ~embedding_store() = default;

  virtual size_t dim() const = 0;

  /// Writes one row per key into `out` (keys.size() * dim floats, row-major). A missing key is
  /// created from the initializer; in read-only mode it reads its initial vector instead and the
  /// store does not grow. Fails with errc::dimension_mismatch when `out` has the wrong size.
  virtual caf::error lookup(std::span<const std::string_view> keys, std::span<float> out) = 0;

  /// Applies one gradient row per key with the configured optimizer; `step` is the global
  /// training step (for TTL eviction). `keys` must be deduplicated by the caller. Fails, with
  /// no row changed, on a size mismatch (errc::dimension_mismatch), a NaN or Inf gradient
  /// (errc::non_finite), or in read-only mode (errc::read_only).
  virtual caf::error update(std::span<const std::string_view> keys,
                            std::span<const float> grads, int64_t step) = 0;

  virtual store_stats stats() const = 0;

  /// Calls f(key, values) for every row, in no particular order; f must not change the store.
  virtual void scan(const std::function<void(std::string_view, std::span<const float>)>& f) = 0;
};

} // namespace darcy::stores
