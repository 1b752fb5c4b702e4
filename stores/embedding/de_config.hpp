// Checking a de_config and building the store that serves it. Every shard of an embedding
// builds its store from the same de_config, so a config that validates here works everywhere.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "messages/embedding/embedding_config.hpp"
#include "messages/error.hpp"
#include "stores/embedding/embedding_store.hpp"

namespace darcy::stores {

/// Fails with errc::invalid_config naming the embedding and the field: a bad name, dim 0 or
/// over 65536, an invalid initializer, update rule parameters, admission or eviction, a
/// default_value of the wrong size, max_batch 0. A rule this process does not know passes: the
/// store that binds it (make_store) refuses it with errc::unknown_rule.
caf::error validate(const de_config& cfg);

/// Fails with errc::empty_batch or errc::batch_too_large (naming the embedding and the limit).
caf::error check_batch(const de_config& cfg, size_t batch);

/// The one check of an embedding update's gradients, which every store's update and every op
/// that sums gradients before sending them runs; nothing is applied when it fails:
/// errc::read_only for a read-only table, errc::dimension_mismatch when grads.size() != keys *
/// dim, errc::non_finite naming the first key (by position) with a NaN or an infinity. Each
/// names `table`.
caf::error check_gradients(std::string_view table, bool read_only, size_t dim, size_t keys,
                           std::span<const float> grads);

/// The same for `keys` rows of `cfg`.
caf::error check_gradients(const de_config& cfg, size_t keys, std::span<const float> grads);

/// The entry of embedding `name` in a map keyed by embedding name (the master's configs, a
/// shard's tables), or errc::unknown_embedding naming it.
template <class Map>
caf::expected<typename Map::mapped_type*> find_embedding(Map& by_name, const std::string& name) {
  auto i = by_name.find(name);
  if (i == by_name.end())
    return make_error(errc::unknown_embedding, name);
  return &i->second;
}

/// The store for one shard of `cfg`, validated first.
caf::expected<std::unique_ptr<embedding_store>> make_store(const de_config& cfg);

/// The config one shard's store is opened with: `cfg` with a persistent path made per shard
/// (cfg.path/shard-<index>, for LevelDB a directory, for Redis the shard's index), so that a
/// restarted shard finds its rows again.
de_config shard_config(const de_config& cfg, uint32_t index);

/// Removes whatever a persistent store of `cfg` keeps (nothing for memory stores), so that
/// make_store starts it empty. The store must be closed. A Redis shard removes the rows that
/// belong to it among `shard_count` shards (see redis_store::remove).
caf::error remove_store_files(const de_config& cfg, uint32_t shard_count);

} // namespace darcy::stores
