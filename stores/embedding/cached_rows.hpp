// What the backends that keep their rows elsewhere behind a memory_store cache (LevelDB, Redis)
// share: the cache's options, the argument checks of lookup and update, and a lookup's output
// filled from the cache.
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include <caf/error.hpp>

#include "messages/embedding/embedding_config.hpp"
#include "stores/embedding/memory_store.hpp"

namespace darcy::stores {

/// A cache for rows of `cfg`: its dim, initializer, optimizer and default value, no admission
/// and no eviction (the backend decides both).
memory_store_options cache_options(const de_config& cfg);

/// errc::dimension_mismatch unless `out` holds keys * cfg.dim floats.
caf::error check_lookup(const de_config& cfg, size_t keys, std::span<const float> out);

/// errc::read_only, errc::dimension_mismatch (keys * cfg.dim gradient values), errc::non_finite.
caf::error check_update(const de_config& cfg, size_t keys, std::span<const float> grads);

/// Writes each key's row to out (keys.size() * cfg.dim floats): the cached row, on which
/// `cached(k, row)` is then called; or, for a key the cache lacks, cfg.default_value in
/// read-only mode when it is set, and the key's initial row otherwise.
void fill_from_cache(memory_store& cache, const de_config& cfg,
                     std::span<const std::string_view> keys, std::span<float> out,
                     const std::function<void(size_t, const row_ref&)>& cached);

/// The keys for which present(k) holds, with their gradient rows; answers how many were left out.
size_t gather_present(std::span<const std::string_view> keys, std::span<const float> grads,
                      size_t dim, const std::function<bool(size_t)>& present,
                      std::vector<std::string_view>& kept, std::vector<float>& kept_grads);

} // namespace darcy::stores
