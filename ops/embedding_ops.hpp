// The model author's embedding operations, the seed's TensorFlow ops in C++: lookup with a
// backward pass, sampled-softmax logits, top-k and consistent save/restore. Each call goes
// through the session's embedding service, so in-process and cluster sessions behave alike.
//
//   auto s = ops::session::open({});                       // an in-process cluster
//   de_config cfg;
//   cfg.dim = 16;
//   cfg.optimizer = {optimizer_kind::adagrad, 0.1f};
//   auto rows = ops::dynamic_embedding_lookup(**s, {"money", "bank"}, cfg, "words");
//   // ... forward and backward through rows->rows ...
//   rows->handle.backward(grads, step);                    // the shards' optimizer applies them
//   ops::save(**s, "model/", {step, "corpus.txt:1234", {}});
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "actors/embedding/shard_client.hpp"
#include "compute/top_k.hpp"
#include "messages/embedding/embedding_interfaces.hpp"
#include "ops/session.hpp"

namespace darcy::ops {

using matrix = compute::row_matrix;

/// Sends the gradients of one lookup's rows back to the service. Only the gradients travel:
/// the service kept the lookup's keys under the handle. A handle is used once: after a
/// successful backward, another fails with errc::not_found, as does one whose lookup is older
/// than the service's last max_pending_lookups, or one a restarted shard no longer holds
/// (shards that still held it have then applied their part once). A handle from the direct
/// path (an in-process session) holds its keys itself and does not expire; one from a session
/// with direct_shards expires as the shards drop it.
class lookup_handle {
public:
  /// A lookup made on the direct path keeps its keys' route here instead of at the service.
  struct direct_route;

  lookup_handle() = default;
  lookup_handle(session* owner, uint64_t id, std::vector<size_t> rows, std::vector<size_t> dims,
                std::shared_ptr<direct_route> direct = nullptr)
    : session_(owner),
      id_(id),
      rows_(std::move(rows)),
      dims_(std::move(dims)),
      direct_(std::move(direct)) {}

  /// Applies one gradient row per key of the lookup (in key order; rows of a repeated key are
  /// summed) with the embedding's configured optimizer. `step` is the global training step. In
  /// a session with direct_shards it returns once the gradients are checked and sent (flush).
  /// Fails with errc::dimension_mismatch for a wrong shape and errc::non_finite for a NaN or
  /// Inf; the service is then unchanged and the handle still usable. Single-table lookups.
  caf::error backward(std::span<const float> grads, int64_t step = 0) const;
  caf::error backward(const matrix& grads, int64_t step = 0) const;

  /// The same for a multi-table lookup: one gradient matrix per table, in request order.
  caf::error backward(const std::vector<const matrix*>& grads, int64_t step = 0) const;

  /// 0 for a lookup made without backward in mind.
  uint64_t id() const { return id_; }

private:
  caf::error direct_backward(const std::vector<std::span<const float>>& grads, int64_t step) const;

  session* session_ = nullptr;
  uint64_t id_ = 0;
  std::vector<size_t> rows_;
  std::vector<size_t> dims_;
  std::shared_ptr<direct_route> direct_;
};

struct lookup_result {
  /// One row per key, in key order.
  matrix rows;
  lookup_handle handle;
};

/// Looks up `keys` in embedding `name` (created from `config`, with config.name replaced by
/// `name`, on first use). Missing keys get rows as the embedding's admission policy allows.
/// In an in-process session the lookup and its backward take the direct path (the caller's
/// thread works on the shards' stores), and in a session with direct_shards they go straight
/// to the shards, with the same results and errors.
/// With for_backward false the service keeps no handle (reads for inference or export), and
/// the result's handle cannot be used. Fails with errc::empty_batch, errc::batch_too_large,
/// errc::invalid_config, or the transport's error when the service does not answer.
caf::expected<lookup_result> dynamic_embedding_lookup(session& s, std::vector<std::string> keys,
                                                      const de_config& config,
                                                      const std::string& name,
                                                      bool for_backward = true);

/// One table of a multi-table lookup: its keys as strings, or already hashed in `hashed`
/// (each key with its compute::hash_key), which is then used instead of `keys`.
struct table_lookup {
  const de_config* config = nullptr;
  std::string name;
  std::vector<std::string> keys;
  key_batch hashed;
};

struct multi_lookup_result {
  /// One matrix per table, in request order, one row per key in key order.
  std::vector<matrix> rows;
  lookup_handle handle;
};

/// While it lives, the calling thread's lookups for inference (for_backward false) in sessions
/// with direct_shards on a cluster wait for no shard past `deadline`: a shard still silent
/// then fails the lookup with errc::deadline_exceeded or, with allow_partial, leaves its keys
/// with rows of zeros and is counted in missing_shards(). Scopes do not nest.
class lookup_deadline_scope {
public:
  lookup_deadline_scope(std::chrono::steady_clock::time_point deadline, bool allow_partial);
  ~lookup_deadline_scope();
  lookup_deadline_scope(const lookup_deadline_scope&) = delete;
  lookup_deadline_scope& operator=(const lookup_deadline_scope&) = delete;

  /// Shards left out so far, counted once per lookup that missed them.
  size_t missing_shards() const { return limits_.missing.size(); }

  /// What the lookup path reads and fills.
  actors::lookup_deadline& limits() { return limits_; }

private:
  actors::lookup_deadline limits_;
};

/// Looks up several tables in one request to the service (one round trip, one handle).
caf::expected<multi_lookup_result> dynamic_embedding_lookup(session& s,
                                                            std::vector<table_lookup> tables,
                                                            bool for_backward = true);

/// Sampled-softmax logits for a batch of examples: row b of `activations` is example b, and
/// `positive_keys[b]` its positive keys (at least one each, any number). Columns are the
/// positives, padded to the batch's largest count, then `num_sampled` negatives shared by the
/// batch, drawn with replacement from the embedding's rows by the table's sampler
/// (de_config::sampler). Every logit is a·w - log(n * Q(key)), n the negatives drawn; a padding
/// column, or a negative that is one of the example's own positives (an accidental hit), holds
/// masked_logit with label 0. Labels of an example's positives are 1 / (its positive count).
/// Negatives are never a positive of the batch; while the table holds nothing else (the first
/// steps), there are none. num_sampled above the table's rows fails (errc::invalid_argument)
/// unless `at_most`: then it is the most negatives, and a table that holds fewer rows than
/// num_sampled (a growing label table) gives as many as it has rows besides the positives.
struct sampled_logits_result {
  matrix logits;
  matrix labels;
  std::vector<std::string> sampled_keys;
  /// The key of each logit column of each example (padding: empty), for backward().
  std::vector<std::vector<std::string>> column_keys;

  /// Sends d(loss)/d(logits) to the rows of the keys involved and returns
  /// d(loss)/d(activations). Masked columns carry no gradient.
  caf::expected<matrix> backward(const matrix& dlogits, int64_t step = 0) const;

  // Kept for backward(): the activations, the looked-up rows (one per distinct key), and for
  // each (example, column) the index of its row there (-1 for padding).
  matrix activations;
  matrix rows;
  std::vector<int64_t> row_of;
  lookup_handle handle;
};

inline constexpr float masked_logit = -1e30f;

/// The checks sampled_logits and full_logits share, `op` naming the caller in messages:
/// errc::empty_batch for no examples, errc::dimension_mismatch unless `activations` is
/// examples × dim, errc::invalid_argument for an example without positive keys.
caf::error check_logit_inputs(const char* op,
                              const std::vector<std::vector<std::string>>& positive_keys,
                              const matrix& activations, uint32_t dim);

caf::expected<sampled_logits_result> sampled_logits(
  session& s, const std::vector<std::vector<std::string>>& positive_keys, const matrix& activations,
  uint32_t num_sampled, const de_config& config, const std::string& name, uint64_t seed = 1,
  bool at_most = false);

/// The k rows of `name` with the largest score (inner product or cosine) against each row of
/// `activations`.
caf::expected<top_k_result> top_k(session& s, const matrix& activations, uint32_t k,
                                  const de_config& config, const std::string& name,
                                  top_k_score score = top_k_score::inner_product);

/// The same from the shards' ANN indexes (de_config::ann must be enabled, else
/// errc::invalid_config): each shard's index proposes candidates, which are scored exactly. The
/// result's staleness_s is the age of the oldest change not yet indexed when it was read, at
/// most q.max_staleness_ms.
caf::expected<top_k_result> approximate_top_k(session& s, const matrix& activations, uint32_t k,
                                              const de_config& config, const std::string& name,
                                              top_k_score score = top_k_score::inner_product,
                                              const ann_query& q = {});

/// Rows, memory and counters of embedding `name` across the service's shards.
/// errc::unknown_embedding when the service has no such embedding.
caf::expected<embedding_stats> stats(session& s, const std::string& name);

/// Waits until the shards have applied every backward pass this session sent, and returns the
/// first failure among them. Only a session with direct_shards has any to wait for: there,
/// backward returns once its pass is checked and sent, and a shard's failure is reported by
/// the session's next backward or by this call.
caf::error flush(session& s);

/// What a training loop saves beside its embeddings: its step, where its input stands, and
/// its dense parameters.
struct training_state {
  int64_t step = 0;
  std::string input_position;
  std::vector<float> dense;

  friend bool operator==(const training_state&, const training_state&) = default;
};

/// Takes one consistent checkpoint of every embedding of the session's service under `path`,
/// with `state`. Requests sent meanwhile wait; none is half applied in the checkpoint, except
/// the backward passes of other sessions with direct_shards (see session_options).
/// With full_every > 0 the checkpoint is incremental: when the current checkpoint under `path`
/// is this service's previous save there, with fewer than full_every deltas on its full one,
/// only the rows changed since (and the keys evicted) are written, as a delta on it; otherwise
/// a full checkpoint starts a new chain. restore replays a chain from its full checkpoint, and
/// retention removes whole chains (stores/checkpoint/checkpoint_chain.hpp). On a cluster, with
/// an absolute `path` and the master in this process, the parts the shards wrote on their
/// hosts are fetched to this one (ops/ship_files.hpp): the checkpoint is whole here.
caf::error save(session& s, const std::string& path, const training_state& state,
                uint32_t full_every = 0);

/// save with full_every after a restore from `path`'s newest checkpoint `restored`, nothing
/// trained since: a full checkpoint that names `restored` (checkpoint_manifest::same_as), so
/// that serving copies that hold it go on with the new chain without a restore, and the
/// later saves are deltas on it. When `restored` is no longer the newest there, an ordinary
/// save with full_every.
caf::error save_restored(session& s, const std::string& path, const training_state& state,
                         uint32_t full_every, const std::string& restored);

/// Applies checkpoint `link` of the incremental chain under `path` (see save's full_every) to
/// the service's live tables: a serving copy restored from that chain follows training one
/// delta at a time. Each shard applies its part of the link whole, in one step, or not at all.
/// errc::invalid_argument, changing nothing, unless `link`'s base is the checkpoint the service
/// last restored or synced; a damaged part fails with errc::corrupt_file, changing nothing.
/// Lookups go on meanwhile: one that crosses a sync may find some shards before it and
/// others after it, each whole. On a cluster, with an absolute `path`, the link's files are
/// first sent to the shards' hosts that lack them (ops/ship_files.hpp).
caf::error sync(session& s, const std::string& path, const checkpoint_manifest& link);

struct restored_checkpoint {
  training_state state;
  /// The configs of the embeddings it held.
  std::vector<de_config> embeddings;
};

/// Loads the checkpoint under `path` into the service (whatever shard count wrote it) and
/// returns the training state saved with it. errc::corrupt_file or errc::not_found otherwise.
/// On a cluster, with an absolute `path`, its chain's files are first sent to the shards' hosts
/// that lack them; a current checkpoint whose parts never all reached this host (its shards'
/// host died between its manifest and their fetch) is set aside for the newest one whose are,
/// which becomes the current one, with a warning. It moves every row: it may take `timeout`
/// (none: s.timeout()).
caf::expected<restored_checkpoint> restore(
  session& s, const std::string& path,
  std::optional<std::chrono::milliseconds> timeout = std::nullopt);

} // namespace darcy::ops
