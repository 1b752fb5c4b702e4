// Embedding-service protocol values and the typed interfaces of its actors. Keys travel as raw
// strings (no dictionary); rows travel as flat float vectors, keys.size() * dim long, in key
// order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/checkpoint.hpp"
#include "messages/cluster/membership.hpp"
#include "messages/embedding/embedding_config.hpp"
#include "messages/embedding/key_batch.hpp"
#include "messages/shared_floats.hpp"

namespace darcy {

struct embedding_stats {
  uint64_t rows = 0;
  /// Memory the store holds for its rows, index and keys.
  uint64_t bytes = 0;
  /// What the rows need at the least: key bytes plus values and slots.
  uint64_t raw_bytes = 0;
  /// Rows held in memory: all of them in a memory store, the memory tier's in a store with a
  /// backend (LevelDB, Redis).
  uint64_t cached_rows = 0;
  /// Rows the memory tier may hold under its byte budget (0 in a memory store).
  uint64_t cache_capacity = 0;
  /// Keys a store with a backend found in its memory tier, and keys it had to read from the
  /// backend or create (0 in a memory store).
  uint64_t tier_hits = 0;
  uint64_t tier_misses = 0;
  /// Rows the LevelDB store read from disk (for lookups, updates and prefetches), and those of
  /// them that prefetches read (0 in other stores).
  uint64_t disk_reads = 0;
  uint64_t prefetched_rows = 0;
  /// Bytes the backend holds on disk (LevelDB), 0 elsewhere.
  uint64_t disk_bytes = 0;
  /// Rows removed by the eviction policy.
  uint64_t evictions = 0;
  /// Gradient rows dropped because their key was not admitted.
  uint64_t dropped_updates = 0;
  /// Shard requests the master sent again after a timeout, service-wide (0 from a shard).
  uint64_t retried_requests = 0;
  /// Supervised shards the master saw replaced by a new actor and refilled, service-wide (0
  /// from a shard).
  uint64_t recovered_shards = 0;
  /// With an ANN index (de_config::ann): rows in it, changed rows not yet in it, and the 99th
  /// percentile of the seconds a change waited to enter it, over the last 4,096 changes
  /// indexed per shard (the largest shard's, service-wide).
  uint64_t ann_rows = 0;
  uint64_t ann_backlog = 0;
  double ann_staleness_p99_s = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, embedding_stats& x) {
  return f(caf::meta::type_name("embedding_stats"), x.rows, x.bytes, x.raw_bytes, x.cached_rows,
           x.cache_capacity, x.tier_hits, x.tier_misses, x.disk_reads, x.prefetched_rows,
           x.disk_bytes, x.evictions, x.dropped_updates, x.retried_requests, x.recovered_shards,
           x.ann_rows, x.ann_backlog, x.ann_staleness_p99_s);
}

/// How top_k scores a row w against a query c: the inner product c·w; the inner product with a
/// bias, [c;1]·[w;b], where a row's last value is its bias and queries have dim - 1 values; or
/// the cosine c·w / (|c| |w|), where a zero row or query scores 0.
enum class top_k_score : uint8_t { inner_product = 0, inner_product_bias = 1, cosine = 2 };

/// Top-k answers for a batch of queries: query q's hits are keys and scores in
/// [offsets[q], offsets[q + 1]), best first.
struct top_k_result {
  std::vector<uint32_t> offsets;
  std::vector<std::string> keys;
  std::vector<float> scores;
  /// An approximate answer's staleness: the seconds the oldest change not yet in the index
  /// had waited when the index was read (the largest over the shards); 0 when exact.
  double staleness_s = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, top_k_result& x) {
  return f(caf::meta::type_name("top_k_result"), x.offsets, x.keys, x.scores, x.staleness_s);
}

/// How an approximate top-k reads a table's ANN index (de_config::ann): `probes` lists and
/// `rerank` candidates re-scored exactly (0: the table's settings). Changes older than
/// `max_staleness_ms` enter the index before it is read (0: every change), so an answer is
/// never staler than that.
struct ann_query {
  uint32_t probes = 0;
  uint32_t rerank = 0;
  uint32_t max_staleness_ms = 10000;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ann_query& x) {
  return f(caf::meta::type_name("ann_query"), x.probes, x.rerank, x.max_staleness_ms);
}

/// Full logits: the logit q·w of every row of a table for each of a batch of queries. `keys`
/// name the rows in column order; `logits` is row-major, queries × keys.size().
struct full_logits_part {
  std::vector<std::string> keys;
  std::vector<float> logits;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, full_logits_part& x) {
  return f(caf::meta::type_name("full_logits_part"), x.keys, x.logits);
}

/// Candidate sampling, the seed's merged interface: positives first (is_positive), then the
/// sampled negatives; `probs` is each key's probability of one draw under the distribution.
struct sample_result {
  std::vector<std::string> keys;
  std::vector<uint8_t> is_positive;
  std::vector<double> probs;
  /// The table's rows when it was drawn (the candidate sampler's answer only).
  uint64_t rows = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sample_result& x) {
  return f(caf::meta::type_name("sample_result"), x.keys, x.is_positive, x.probs, x.rows);
}

/// A shard's sampling metadata: its table's sampler, how many of its rows fall in each
/// frequency class (compute::frequency_class; classes ascending), their total weight (unigram:
/// the sum of frequency^power; otherwise the row count), and the frequencies of the positives
/// it holds.
struct sample_stats {
  sampler_config sampler;
  std::vector<uint32_t> classes;
  std::vector<uint64_t> counts;
  double weight = 0;
  std::vector<std::string> positives;
  std::vector<uint64_t> positive_freqs;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sample_stats& x) {
  return f(caf::meta::type_name("sample_stats"), x.sampler, x.classes, x.counts, x.weight,
           x.positives, x.positive_freqs);
}

/// What one shard draws: `count` negatives by `sampler` (log_uniform: a row of class c weighs
/// class_weights[c], from every shard's classes), never one of `positives`; probabilities are
/// weight / total_weight.
struct sample_plan {
  sampler_config sampler;
  std::vector<double> class_weights;
  double total_weight = 0;
  uint32_t count = 0;
  uint64_t seed = 0;
  std::vector<std::string> positives;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sample_plan& x) {
  return f(caf::meta::type_name("sample_plan"), x.sampler, x.class_weights, x.total_weight, x.count,
           x.seed, x.positives);
}

/// Lookup handles a master, and each shard, keeps for backward before dropping the oldest.
inline constexpr size_t max_pending_lookups = 4096;

/// One table's keys in a multi-table request.
struct table_keys {
  std::string name;
  key_batch keys;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, table_keys& x) {
  return f(caf::meta::type_name("table_keys"), x.name, x.keys);
}

/// The rows of a multi-table lookup: one buffer per table in request order, keys.size() * dim
/// floats each, and the handle that backward names (0 when none was kept).
struct lookup_reply {
  uint64_t handle = 0;
  std::vector<shared_floats> rows;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lookup_reply& x) {
  return f(caf::meta::type_name("lookup_reply"), x.handle, x.rows);
}

using create_atom = caf::atom_constant<caf::atom("create")>;
using sample_atom = caf::atom_constant<caf::atom("sample")>;
using sample_stats_atom = caf::atom_constant<caf::atom("samp_stats")>;
using sample_part_atom = caf::atom_constant<caf::atom("samp_part")>;
using top_k_atom = caf::atom_constant<caf::atom("top_k")>;
using full_logits_atom = caf::atom_constant<caf::atom("full_logit")>;
using full_backward_atom = caf::atom_constant<caf::atom("full_back")>;
using restore_atom = caf::atom_constant<caf::atom("restore")>;
using save_part_atom = caf::atom_constant<caf::atom("save_part")>;
using load_part_atom = caf::atom_constant<caf::atom("load_part")>;
using apply_part_atom = caf::atom_constant<caf::atom("apply_part")>;
using sync_atom = caf::atom_constant<caf::atom("sync")>;
using update_atom = caf::atom_constant<caf::atom("update")>;
using route_atom = caf::atom_constant<caf::atom("route")>;
using prefetch_atom = caf::atom_constant<caf::atom("prefetch")>;

/// The operations shard and master share, so that a client of them cannot tell one shard from
/// a sharded service. Errors: errc::unknown_embedding, errc::empty_batch,
/// errc::batch_too_large, errc::dimension_mismatch, errc::non_finite, errc::read_only,
/// errc::overloaded (master only); each leaves the service unchanged.
/// top_k(name, queries, k, score): the k rows with the largest score (see top_k_score) for each
/// query; queries are row-major, dim values each (dim - 1 for inner_product_bias). With an
/// ann_query it answers from the table's ANN index instead, re-ranking its candidates exactly
/// (errc::invalid_config for a table without one).
/// full_logits(name, queries, max_rows): the logits of every row for each query (queries
/// row-major, dim values each); errc::batch_too_large when the table holds more than max_rows.
/// full_backward(name, keys, queries, dlogits, step): for d(loss)/d(logits) of the columns
/// `keys` (dlogits row-major, queries × keys), applies d(loss)/d(row) = sum over queries of
/// dlogit · query to each row with the table's optimizer and answers d(loss)/d(queries), the
/// rows read before they change; a key no longer stored (evicted since) is left out. Keys
/// must be distinct.
using embedding_ops_actor = caf::typed_actor<
  caf::replies_to<create_atom, de_config>::with<ok_atom>,
  caf::replies_to<lookup_atom, std::string, std::vector<std::string>>::with<std::vector<float>>,
  caf::replies_to<update_atom, std::string, std::vector<std::string>, std::vector<float>,
                  int64_t>::with<ok_atom>,
  caf::replies_to<stats_atom, std::string>::with<embedding_stats>,
  caf::replies_to<top_k_atom, std::string, std::vector<float>, uint32_t,
                  top_k_score>::with<top_k_result>,
  caf::replies_to<top_k_atom, std::string, std::vector<float>, uint32_t, top_k_score,
                  ann_query>::with<top_k_result>,
  caf::replies_to<full_logits_atom, std::string, std::vector<float>,
                  uint64_t>::with<full_logits_part>,
  caf::replies_to<full_backward_atom, std::string, std::vector<std::string>, std::vector<float>,
                  std::vector<float>, int64_t>::with<std::vector<float>>>;

/// One shard: the rows of every embedding whose key hash falls on it (compute::shard_of_hash).
/// The flat data path: lookup(tables, handle) answers one row buffer per table, and with a
/// handle other than 0 keeps the keys, so that backward(handle, grads, step) applies one
/// gradient buffer per table to them without the keys crossing again; keys must be distinct
/// within each table, and their hashes are trusted. A backward is applied once: a repeat is
/// answered ok, and a handle the shard does not hold (expired, or the shard restarted since
/// the lookup) fails with errc::not_found and changes nothing. A shard keeps at most
/// max_pending_lookups handles and 64 MiB of their keys, dropping the oldest.
/// update(tables, grads, step, request_id) is the same without a lookup first. save_part(dir, id,
/// index, base, track_limit) writes one file per embedding under dir/id, and answers a repeated
/// save of the same dir/id from memory without writing again: a delta of the rows changed since
/// checkpoint `base` where the shard tracked them since then, else every row; with a
/// track_limit, the shard then tracks up to that many changed keys per embedding for a delta
/// on `id`. load_part(dir, manifest, index, count, request_id) replaces the shard's tables with
/// the rows that hash to `index` of `count` shards of the manifest (replayed from its chain's
/// full checkpoint when it is incremental). apply_part(dir, link, index, count, request_id)
/// applies one checkpoint of a chain to the live tables instead (a sync): its rows that hash to
/// `index` replace theirs, its deleted keys go, and a whole part first removes what its shard
/// held; every part is read first, so a damaged one changes nothing. update(..., request_id) and
/// full_backward(..., request_id) applies its gradients once too, a repeat answering the same
/// d(queries) without them. update(..., request_id) and
/// load_part apply a request id once: a repeat (a retry, or a late duplicate) among the last 65,536
/// ids is answered ok and changes nothing. Id 0 is never deduplicated.
/// prefetch(tables), one-way, is a trainer's look-ahead: the shard brings the rows of those
/// keys (distinct within each table) into its memory tier (embedding_store::prefetch) for the
/// lookup that will ask for them; it creates no row and changes no answer, and a table it does
/// not hold is passed over. Nothing is answered; a store's failure is logged.
using embedding_shard_actor = embedding_ops_actor::extend<
  caf::replies_to<lookup_atom, std::vector<table_keys>, uint64_t>::with<std::vector<shared_floats>>,
  caf::replies_to<backward_atom, uint64_t, std::vector<shared_floats>, int64_t>::with<ok_atom>,
  caf::replies_to<update_atom, std::vector<table_keys>, std::vector<shared_floats>, int64_t,
                  uint64_t>::with<ok_atom>,
  caf::replies_to<update_atom, std::string, std::vector<std::string>, std::vector<float>, int64_t,
                  uint64_t>::with<ok_atom>,
  caf::replies_to<full_backward_atom, std::string, std::vector<std::string>, std::vector<float>,
                  std::vector<float>, int64_t, uint64_t>::with<std::vector<float>>,
  caf::replies_to<sample_stats_atom, std::string, std::vector<std::string>>::with<sample_stats>,
  caf::replies_to<sample_part_atom, std::string, sample_plan>::with<sample_result>,
  caf::replies_to<save_part_atom, std::string, std::string, uint32_t, std::string,
                  uint64_t>::with<std::vector<checkpoint_embedding>>,
  caf::replies_to<load_part_atom, std::string, checkpoint_manifest, uint32_t, uint32_t,
                  uint64_t>::with<ok_atom>,
  caf::replies_to<apply_part_atom, std::string, checkpoint_manifest, uint32_t, uint32_t,
                  uint64_t>::with<ok_atom>,
  caf::reacts_to<prefetch_atom, std::vector<table_keys>>>;

/// What a client needs to reach a service's shards without its master: the shards in shard
/// order (keys placed by compute::shard_of_hash) and the config of every embedding.
struct shard_route {
  std::vector<embedding_shard_actor> shards;
  std::vector<de_config> configs;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_route& x) {
  return f(caf::meta::type_name("shard_route"), x.shards, x.configs);
}

/// The front door: splits a batch by shard (hash(key) mod n), removes duplicate keys (summing
/// their gradients), fans out and answers in input order. A whole batch is checked before any
/// shard sees it, so a bad request changes nothing. save(dir, step, extra) takes one consistent
/// checkpoint of every embedding, save(dir, step, extra, full_every) an incremental one (see
/// ops::save); restore(dir) loads one, whatever shard count wrote it. sync(dir, link) applies
/// checkpoint `link` of the chain under `dir` on the live tables, when its base is the
/// checkpoint the service last restored or synced (else errc::invalid_argument, changing
/// nothing): a serving copy follows training by its incremental checkpoints.
/// lookup(tables, keep) looks up several tables in one request; with keep, the reply's handle
/// lets backward(handle, grads, step) send only gradients (one buffer per table, in the
/// lookup's key order, rows of a repeated key summed). A handle is used once; the master keeps
/// the last max_pending_lookups, and an unknown one fails with errc::not_found.
/// It also listens to the registry (cluster_event): when a shard's service comes back with a new
/// actor, that shard reloads its rows from the last checkpoint before it serves again.
/// route() answers the shards and configs for a client that goes to the shards itself
/// (actors::shard_client); errc::unsupported when the shards are supervised, since a shard
/// may then be replaced and must be refilled before it serves.
using embedding_master_actor = embedding_ops_actor::extend<
  caf::replies_to<lookup_atom, std::vector<table_keys>, bool>::with<lookup_reply>,
  caf::replies_to<backward_atom, uint64_t, std::vector<shared_floats>, int64_t>::with<ok_atom>,
  caf::replies_to<save_atom, std::string, int64_t, std::string>::with<checkpoint_manifest>,
  caf::replies_to<save_atom, std::string, int64_t, std::string,
                  uint32_t>::with<checkpoint_manifest>,
  caf::replies_to<save_atom, std::string, int64_t, std::string, uint32_t,
                  std::string>::with<checkpoint_manifest>,
  caf::replies_to<restore_atom, std::string>::with<checkpoint_manifest>,
  caf::replies_to<sync_atom, std::string, checkpoint_manifest>::with<ok_atom>,
  caf::replies_to<route_atom>::with<shard_route>, caf::reacts_to<cluster_event>>;

/// The candidate sampler: Sample(positives, num_sampled, seed) over an embedding's rows by the
/// table's sampler (de_config::sampler), shared out among the shards by their metadata.
/// Negatives are drawn with replacement, as many as asked. Errors: errc::unknown_embedding,
/// errc::invalid_argument (no candidate other than the positives).
using candidate_sampler_actor =
  caf::typed_actor<caf::replies_to<sample_atom, std::string, std::vector<std::string>, uint32_t,
                                   uint64_t>::with<sample_result>>;

} // namespace darcy
