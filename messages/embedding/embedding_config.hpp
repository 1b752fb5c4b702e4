// Configuration of one dynamic embedding (the seed's de_config) as plain serializable values:
// how rows start, which optimizer the shards run, which keys are admitted, which rows are
// evicted. Validation and math live in compute/ and stores/; this file only defines the values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/optimizer_config.hpp"

namespace darcy {

enum class init_kind : uint8_t { zeros = 0, uniform = 1, normal = 2, truncated_normal = 3 };

struct initializer_config {
  init_kind kind = init_kind::uniform;
  /// uniform: [low, high); normal and truncated_normal: mean and stddev.
  float low = -0.05f;
  float high = 0.05f;
  float mean = 0.0f;
  float stddev = 0.05f;
  uint64_t seed = 1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, initializer_config& x) {
  return f(x.kind, x.low, x.high, x.mean, x.stddev, x.seed);
}

/// none: every key gets a row. frequency: a key gets a row at its min_count-th sighting (exact
/// counts for keys not yet admitted). bloom: the same with a counting Bloom filter sized for
/// `capacity` distinct keys at false-positive rate `fp_rate` (bounded memory, approximate).
enum class admission_kind : uint8_t { none = 0, frequency = 1, bloom = 2 };

struct admission_config {
  admission_kind kind = admission_kind::none;
  uint32_t min_count = 1;
  uint64_t capacity = 1 << 20;
  double fp_rate = 0.01;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, admission_config& x) {
  return f(x.kind, x.min_count, x.capacity, x.fp_rate);
}

/// none: rows stay. ttl: rows not updated for more than ttl_steps global steps go. lfu / lru:
/// past max_rows, the least frequently / least recently used rows go.
enum class eviction_kind : uint8_t { none = 0, ttl = 1, lfu = 2, lru = 3 };

struct eviction_config {
  eviction_kind kind = eviction_kind::none;
  int64_t ttl_steps = 0;
  uint64_t max_rows = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, eviction_config& x) {
  return f(x.kind, x.ttl_steps, x.max_rows);
}

/// How negatives are drawn: uniform over the candidates, log-uniform by frequency rank
/// (P(rank r) = log((r + 2) / (r + 1)) / log(n + 1)), or by frequency^power (unigram^0.75).
enum class sampler_kind : uint8_t { uniform = 0, log_uniform = 1, unigram = 2 };

/// How the candidate sampler draws negatives from a table: `kind`, and for unigram the power
/// (frequency^power). Ranks (log_uniform) and weights count the lookups of each row, every
/// occurrence of its key in a lookup's batch (key_batch::count).
struct sampler_config {
  sampler_kind kind = sampler_kind::unigram;
  double power = 0.75;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampler_config& x) {
  return f(x.kind, x.power);
}

/// The approximate inner-product index each shard keeps over a table's rows for top_k with an
/// ann_query (stores/embedding/indexed_store.hpp): none unless `enabled`. `lists` inverted lists
/// (0: the square root of the rows, 8 to 4096); a query reads `probes` lists and re-scores
/// `rerank` candidates exactly (at least k of them); a background refresher indexes changed
/// rows every `refresh_ms` milliseconds.
struct ann_config {
  bool enabled = false;
  uint32_t lists = 0;
  uint32_t probes = 16;
  uint32_t rerank = 100;
  uint32_t refresh_ms = 100;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ann_config& x) {
  return f(x.enabled, x.lists, x.probes, x.rerank, x.refresh_ms);
}

/// memory: rows in RAM (memory_store). leveldb: rows persist in LevelDB under `path` (one
/// database per shard: the master appends "/shard-N"), with an LRU cache of `cache_bytes`.
/// redis: rows live in the Redis at `path` (redis://HOST:PORT[/PREFIX]), shared by every shard
/// and readable with no shard at all, behind an LRU cache of `cache_bytes` whose rows are at
/// most `staleness_ms` behind Redis (see stores/embedding/redis_store.hpp).
enum class backend_kind : uint8_t { memory = 0, leveldb = 1, redis = 2 };

/// One dynamic embedding: its rows, how they start, train, enter and leave.
struct de_config {
  /// Letters, digits, '_', '-' and '.'; unique within a service.
  std::string name;
  uint32_t dim = 0;
  initializer_config init;
  optimizer_config optimizer;
  admission_config admission;
  eviction_config eviction;
  backend_kind backend = backend_kind::memory;
  std::string path;
  uint64_t cache_bytes = uint64_t{256} << 20;
  /// Redis backend: a cached row is read again once it is older than this, and a changed row
  /// is written back within this (0: every call reads and writes Redis).
  uint32_t staleness_ms = 1000;
  /// Sandbox (serving) mode: updates and imports are refused, unknown keys read
  /// `default_value` (or their initial vector when it is empty) without growing the table.
  bool read_only = false;
  std::vector<float> default_value;
  /// Largest batch one request may carry; larger ones fail with errc::batch_too_large.
  uint32_t max_batch = 1 << 16;
  /// The distribution the candidate sampler draws this table's negatives from.
  sampler_config sampler;
  /// The index behind approximate top-k.
  ann_config ann;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, de_config& x) {
  return f(x.name, x.dim, x.init, x.optimizer, x.admission, x.eviction, x.backend, x.path,
           x.cache_bytes, x.staleness_ms, x.read_only, x.default_value, x.max_batch, x.sampler,
           x.ann);
}

std::string to_string(init_kind x);
std::string to_string(sampler_kind x);
std::string to_string(admission_kind x);
std::string to_string(eviction_kind x);

} // namespace darcy
