// The direct path into an embedding service whose shards all live in this process: lookups and
// updates run on the shards' stores in the caller's thread (a large request's shards also on
// threads of their own, each holding its shard's lock, on cores no other caller uses), with
// the service's rules (the same checks and errors, the store's optimizer and admission). A
// trainer in the shards' process uses it instead of messages; each key is hashed and routed once.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "actors/embedding/key_routing.hpp"
#include "actors/embedding/shard_tables.hpp"

namespace darcy::actors {

class direct_embedding {
public:
  /// shards[i] is shard i of the service (keys placed by compute::shard_of_hash). Every table
  /// a request names must have been created through the service first.
  explicit direct_embedding(std::vector<shard_tables_ptr> shards);

  /// Writes the rows of every key of `tables` (repeats allowed) to out[t], keys * dim values
  /// in input order, creating rows as each store's initializer and admission allow; answers
  /// the keys split among the shards, for update(). Fails as the master's lookup does
  /// (errc::empty_batch, errc::unknown_embedding, errc::batch_too_large) before any row is
  /// touched, and with errc::dimension_mismatch when an `out` buffer has the wrong size.
  caf::expected<std::shared_ptr<const routed_batch>> lookup(
    const std::vector<table_keys>& tables, const std::vector<std::span<float>>& out) const;

  /// Applies one gradient buffer per table of `route` (input order; the rows of a repeated key
  /// are summed) with each table's optimizer at `step`. Every buffer is checked first
  /// (errc::dimension_mismatch, errc::non_finite, errc::read_only), so a refused update
  /// changes nothing.
  caf::error update(const routed_batch& route, const std::vector<std::span<const float>>& grads,
                    int64_t step) const;

  /// Has each shard's stores prefetch (embedding_store::prefetch) their keys of `tables`, one
  /// shard at a time under its lock, in the caller's thread. A table not created yet is passed
  /// over: there is nothing of it to bring in. Answers the first store's error.
  caf::error prefetch(const std::vector<table_keys>& tables) const;

  /// The k best rows of embedding `name` per query from the shards' ANN indexes, each shard's
  /// under its lock in the caller's thread; fails as the service's approximate top_k does.
  caf::expected<top_k_result> approximate_top_k(const std::string& name,
                                                const std::vector<float>& queries, uint32_t k,
                                                top_k_score score, const ann_query& q) const;

private:
  config_finder configs() const;

  /// The threads a request of `route` runs its shards on: 1 below parallel_keys keys, else the
  /// cores divided among the distinct threads that have sent this object large requests (a
  /// trainer with a thread per core keeps each request in its own thread, where helpers would
  /// only take turns with the other callers).
  size_t threads_for(const routed_batch& route) const;

  std::vector<shard_tables_ptr> shards_;
  size_t cores_;
  mutable std::mutex callers_mutex_;
  /// At most cores_ entries: past that every request runs in its caller's thread anyway.
  mutable std::vector<std::thread::id> callers_;
};

} // namespace darcy::actors
