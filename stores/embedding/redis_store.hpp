// The Redis embedding store, the DynamicEmbedding paper's remote storage with a local cache:
// rows live in one Redis that every shard, and any reader, shares (see redis_location); the
// store keeps an LRU cache of rows under a byte budget. A call reads its missing or stale rows
// in one pipelined MGET and writes changed rows back in one pipelined MSET.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include <caf/expected.hpp>

#include "messages/embedding/embedding_config.hpp"
#include "stores/embedding/redis_client.hpp"
#include "stores/embedding/write_behind_store.hpp"

namespace darcy::stores {

/// The store's clock; tests pass their own to move time without sleeping.
using redis_clock = std::function<std::chrono::steady_clock::time_point()>;

/// Staleness contract (cfg.staleness_ms = S): a cached row that this store has not changed is
/// read from Redis again once it is more than S old; a row it changed is written back at most S
/// after the change (at the first call after that), when the cache evicts it, and on flush().
/// S = 0 reads every row from Redis on every call and writes every change back before the call
/// returns. A store trusts its cache within S, so two writers of one row must use S = 0.
/// Rows carry their key's hash: a record under the wrong key is refused (errc::corrupt_file),
/// never served. When the Redis it reaches again is a restarted one that lost the embedding,
/// every later call fails with errc::io_error until the embedding is restored.
class redis_store : public write_behind_store {
public:
  /// Opens embedding cfg.name in the Redis of cfg.path (a redis_location; a writer without a
  /// shard owns shard 0's rows). A writer records the embedding's format and config there; a
  /// read-only store needs them (errc::not_found otherwise). Fails with errc::invalid_config
  /// for a bad location or an eviction policy, errc::io_error when Redis does not answer, and
  /// errc::corrupt_file when Redis holds the embedding with another dim or optimizer.
  static caf::expected<std::unique_ptr<redis_store>> open(const de_config& cfg,
                                                          redis_clock clock = {});

  /// A lookup-only store of the embedding a writer recorded at `url` under `name`: read-only,
  /// with the writer's config, this cache budget and staleness bound. Serving straight from
  /// Redis needs nothing else, no shard server and no shard count.
  static caf::expected<std::unique_ptr<redis_store>> open_reader(const std::string& url,
                                                                 const std::string& name,
                                                                 uint64_t cache_bytes,
                                                                 uint32_t staleness_ms,
                                                                 redis_clock clock = {});

  /// Deletes the rows that belong to cfg's shard (cfg.path names one) among `shard_count`
  /// shards (compute::shard_of_key), from whichever shard's index lists them, so that open
  /// starts it empty. The rows of other shards stay, so every shard of a service may remove
  /// its rows at once, even when the shard count changed since the rows were written.
  static caf::error remove(const de_config& cfg, uint32_t shard_count);

  ~redis_store() override;

  using write_behind_store::lookup;
  /// A read-only store with staleness 0 reads every row from Redis, past the cache.
  caf::error lookup(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<float> out) override;
  caf::error export_rows(const std::function<void(const row_record&)>& f) override;
  caf::error import_row(const row_record& row) override;

  /// Writes every changed row back.
  caf::error flush();

private:
  redis_store(de_config cfg, redis_location where, std::unique_ptr<redis_client> client,
              std::unique_ptr<memory_store> cache, redis_clock clock);

  caf::error prepare(bool writer);
  /// client_->run, then the restart check.
  caf::expected<std::vector<redis_reply>> run(const std::vector<redis_command>& commands);
  /// Brings `keys` into the cache: cached rows still fresh or changed stay, the others are
  /// read from Redis; an absent row is created (admission permitting) when `create`.
  caf::error load(std::span<const std::string_view> keys, bool create,
                  std::span<uint32_t> rows) override;
  /// The MGET part of load, for the keys `fetch` not usable from the cache (sorted here).
  caf::error fetch_rows(std::vector<std::string_view>& fetch, bool create, time_point now);
  /// A read-only lookup with staleness 0: rows go from Redis to `out`, past the cache.
  caf::error read_through(std::span<const std::string_view> keys, std::span<float> out);
  /// Queues the row for write-back after the staleness bound.
  void mark_dirty(std::string_view key, entry& e, time_point at) override;
  time_point now() const override { return clock_(); }
  /// The rows indexed in Redis and those created here and not written back yet.
  uint64_t rows() const override;
  /// Writes back the rows that are due, then evicts down to the budget.
  caf::error settle() override;
  caf::error write_back(std::vector<std::string> keys, time_point now);
  std::string row_key(std::string_view key) const;
  /// The indexes this store reads: its shard's, or every shard's for a reader without a shard.
  caf::expected<std::vector<std::string>> indexes_read();

  redis_location where_;
  std::string namespace_;
  std::string index_;
  std::unique_ptr<redis_client> client_;
  redis_clock clock_;
  std::chrono::milliseconds staleness_;
  /// Changed rows in the order they changed, with the time of the change.
  std::deque<std::pair<time_point, std::string>> dirty_queue_;
  uint64_t restarts_seen_ = 0;
  /// Set when Redis lost the embedding: every later call fails with it.
  caf::error lost_;
};

} // namespace darcy::stores
