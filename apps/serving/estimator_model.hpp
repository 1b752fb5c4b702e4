// Estimator exports behind `darcy serve`: an export folder (as export_model writes it) loaded
// without the code that trained it, and its predict API on JSON instances.
//
//   POST /v1/models/{name}:predict  {"instances": [{"words": ["a", "b"], "x": 0.5}, ...]}
//   → {"model": name, "version": "3", "predictions": [[...], ...]}, plus "labels": [[...], ...]
//     for a model that ends in a sampled-softmax head
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <caf/expected.hpp>

#include "actors/serving/access_policy.hpp"
#include "apps/serving/predict_envelope.hpp"
#include "apps/serving/replicated_model.hpp"
#include "apps/serving/served_model.hpp"
#include "apps/serving/sync_mirror.hpp"
#include "ops/estimator/export/export.hpp"

namespace darcy::serving {

/// A predict body: {"instances": [...], "deadline_ms": N, "allow_partial": B}, the last two
/// optional.
struct predict_request {
  ops::estimator::batch batch;
  /// 0: the server's default deadline.
  uint32_t deadline_ms = 0;
  /// Answer without the rows of an embedding shard silent at the deadline (those keys get rows
  /// of zeros, and the answer says "partial": true) instead of failing with 504.
  bool allow_partial = false;
};

/// Each feature of an instance is a number, a list of numbers (of one length in every
/// instance), a string or a list of strings, and every instance has the same features.
/// errc::invalid_argument naming the instance and the feature otherwise, for an unknown field,
/// or a deadline_ms outside [1, max_deadline_ms]; errc::batch_too_large beyond
/// max_predict_instances; errc::empty_batch for no instance.
caf::expected<predict_request> parse_predict(const std::string& body,
                                             uint32_t max_deadline_ms = 60000);

class estimator_model : public served_model {
public:
  /// The newest export under `dir`, its requests admitted by `rules`, its dynamic embeddings
  /// served where `where` says in `replicas` copies (replicated_model), the syncs that arrive
  /// as messages kept under `sync_dir` (empty: a temporary folder of its own);
  /// replicated_model::load's errors.
  /// With `mend_every` above zero, a thread of its own calls mend() that often, and up to 32
  /// times less often while mending fails.
  static caf::expected<std::unique_ptr<estimator_model>> load(
    const std::string& dir, access_rules rules,
    const ops::estimator::embedding_placement& where = {}, const std::string& sync_dir = {},
    replica_options replicas = {}, std::chrono::milliseconds mend_every = default_mend_every);

  static constexpr std::chrono::milliseconds default_mend_every{1000};

  /// Ends the mending thread, after the mend() it is in.
  ~estimator_model() override;

  /// The JSON answer to a predict request of ctx.principal for model `name`; thread-safe. With
  /// its embeddings on shards, the lookups wait until ctx.deadline_us (or the body's
  /// deadline_ms), and the answer has "partial". Once a
  /// sync was applied, the answer's "sync" names the last one done before the request came
  /// ({"checkpoint", "step", "dense_step"}): the answer holds every row of that sync, and
  /// perhaps some of a sync still being applied. errc::access_denied or errc::quota_exceeded by the
  /// rules; parse_predict's errors; the model's errors for features it cannot read;
  /// errc::deadline_exceeded for a shard silent at the deadline without allow_partial.
  caf::expected<std::string> predict(const std::string& name, const std::string& body,
                                     const request_context& ctx,
                                     uint32_t max_deadline_ms = 60000) override;

  /// The JSON answer to a sync request of ctx.principal, which needs `manage` on the model. A
  /// body that is a sync message (ops/online/sync_message.hpp) is installed in the model's
  /// sync_mirror first (its refusals: another layout, errc::out_of_order for deltas that do not
  /// follow the link held, asking for the whole chain; a message that does not decode is
  /// errc::invalid_argument), and DIR is that mirror's folder; a body
  /// {"dir": DIR} names a folder this host reads. Then the model's dynamic embeddings are
  /// brought to DIR's current checkpoint (replicated_model::follow: every copy), and its dense
  /// weights to DIR's newest dense sync; thread-safe, one sync at a time (one that comes while
  /// another is applied is refused at once with errc::unavailable, as HTTP 503, so that syncs
  /// hold one HTTP thread at most), while predictions go on. With its embeddings on shards, a copy
  /// that lost a shard (its node died) is loaded again from the export onto live members and DIR's
  /// chain restored onto it before it takes requests: the answer then says "reloaded": true, and
  /// "replicas_serving" counts the copies in service. Until then, requests that need the lost shard
  /// go to another copy, or fail (or are partial) when there is none. errc::access_denied by the
  /// rules; errc::invalid_argument for a body without "dir"; follow's errors when no copy follows
  /// (the sync is then applied again by mend(), with no push needed).
  caf::expected<std::string> sync(const std::string& name, const std::string& body,
                                  const request_context& ctx) override;

  /// Applies DIR of the last sync again (replicated_model::follow) when that sync failed, or
  /// when a copy of the embeddings is out of service and not being loaded again, so that
  /// serving heals though training pushes nothing more (its last sync failed, or it has ended);
  /// a success counts as that sync's. Does nothing while a sync is being applied. Answers
  /// whether something is left to mend.
  bool mend();

  /// {"name", "kind": "estimator", "version", "embeddings": "shards" or "in-process"}, with
  /// shards "replicas" (replicated_model::describe), and
  /// "sync": {"checkpoint", "step", "dense_step", "restored" (the last sync restored a whole
  /// chain), "restores" (how many did), "age_s"} once a sync was applied.
  std::string describe(const std::string& name) const override;

private:
  estimator_model() = default;

  /// The seconds since load, for the access policy's quotas; mutex_ held.
  double now() const;
  /// Keeps `f` as the sync the model holds.
  void record(const ops::estimator::exported_model::followed& f);
  /// Calls mend() every `every`, backing off while it fails, until stopping_.
  void mend_loop(std::chrono::milliseconds every);

  /// Guards access_, synced_ and synced_at_; never held while the model works.
  mutable std::mutex mutex_;
  /// Held by a sync throughout: one at a time, the others refused.
  std::mutex sync_mutex_;
  std::unique_ptr<replicated_model> model_;
  actors::access_policy access_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  /// The last sync applied, and when; the syncs that restored a whole chain.
  std::optional<ops::estimator::exported_model::followed> synced_;
  std::chrono::steady_clock::time_point synced_at_;
  uint64_t restores_ = 0;
  /// Where sync messages are installed; used under sync_mutex_.
  std::unique_ptr<sync_mirror> mirror_;
  /// DIR of the last sync, and whether its follow failed; used under sync_mutex_.
  std::string last_dir_;
  bool unapplied_ = false;
  /// The mending thread's stop, under stop_mutex_.
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread mender_;
};

} // namespace darcy::serving
