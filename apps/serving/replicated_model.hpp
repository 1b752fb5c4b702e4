// An Estimator export served from one or more copies of its embedding shards (`darcy serve
// --embedding-shards N --replicas R`): a prediction goes to a copy in service and, when that copy
// does not answer in its attempt time, to the next, within the request's deadline; a sync brings
// every copy to the chain's head, and a copy that lost a shard is loaded again (the export, then
// the whole chain) on members no other copy uses, before it takes requests again.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "apps/serving/model_retirer.hpp"
#include "apps/serving/replica_set.hpp"
#include "ops/estimator/export/export.hpp"
#include "ops/session.hpp"

namespace darcy::serving {

class replicated_model {
public:
  /// The newest export under `dir`, its embeddings where `where` says, in `r.replicas` copies
  /// (more than one needs where.cluster: each copy on the members assign_replicas gives it).
  /// exported_model::load's errors; assign_replicas's.
  static caf::expected<std::unique_ptr<replicated_model>> load(
    const std::string& dir, const ops::estimator::embedding_placement& where, replica_options r);

  struct prediction {
    ops::estimator::estimator_spec spec;
    /// Rows of a shard silent at the deadline were left out (allow_partial).
    bool partial = false;
  };

  /// The predictions for `b`. With the embeddings on shards, the lookups end at `deadline`
  /// (none: the placement's timeout): each copy but the last tried gets at most the attempt
  /// time; a copy whose lookups fail or time out is taken out of service (the next follow()
  /// brings it back) and the next copy answers. Only the last copy tried may answer partially, and
  /// only with `allow_partial`. Errors of the input are the first copy's; the last copy's
  /// error otherwise.
  caf::expected<prediction> predict(const ops::estimator::batch& b,
                                    std::optional<std::chrono::steady_clock::time_point> deadline,
                                    bool allow_partial);

  struct synced {
    ops::estimator::exported_model::followed followed;
    /// Copies loaded again by this sync, and copies in service after it.
    size_t reloaded = 0;
    size_t serving = 0;
  };

  /// Brings every copy to the current checkpoint of the chain under `dir`
  /// (exported_model::follow). A copy with a member down, or whose follow fails on a lost
  /// shard, is loaded again from the export onto members no copy in service uses (every member
  /// up, for a single copy) and the chain restored onto it; a copy that cannot be is left out
  /// of service. With more than one copy that load runs beside the syncs, on a thread of its
  /// own, so that the copies in service go on following them, and so does the follow of a copy
  /// out of service (a request found it slow or lost) and of one whose follow takes more than
  /// four attempt times (the copies follow one after the other); each catches up with the
  /// newest sync before it takes requests again; these follows beside the syncs may restore a
  /// chain for the placement's restore_timeout. Fails with the first copy's error when no copy
  /// reached the head. `dir` is the same on every call.
  caf::expected<synced> follow(const std::string& dir);

  /// Waits for the loads still running.
  ~replicated_model();

  /// Whether a copy is out of service and not being loaded again: the next follow() starts
  /// bringing it back.
  bool out_of_service() const;

  bool sharded_embeddings() const;
  std::string version() const;
  /// The tables of its export's snapshot.
  std::vector<de_config> embedding_tables() const;

  /// Per copy: {"members", "serving", "reloads"} (an empty list for a single copy on every
  /// member).
  nlohmann::json describe() const;

private:
  struct copy {
    std::shared_ptr<ops::estimator::exported_model> model;
    /// The members holding its shards; empty: every member (a single copy) or this process.
    std::vector<std::string> members;
    bool serving = true;
    uint64_t reloads = 0;
    /// Loaded again on a thread of its own (more than one copy): syncs pass it over.
    bool reloading = false;
  };

  replicated_model() = default;

  /// The cluster's members up, by name (for more than one copy).
  caf::expected<std::vector<std::string>> members_up();
  /// Takes copy i out of service when it still holds `model`.
  void take_out(size_t i, const std::shared_ptr<ops::estimator::exported_model>& model,
                const caf::error& why);
  /// Copy `c` (index i of the copies) after one sync: followed, or loaded again and restored
  /// (with more than one copy, started on a thread of its own: errc::unavailable meanwhile);
  /// the restore of a copy loaded again may take where.restore_timeout.
  caf::expected<ops::estimator::exported_model::followed> follow_copy(
    size_t i, copy& c, const std::string& dir, const std::vector<std::string>& up);
  /// follow() of more than one copy: the copies in service one after the other, each reported
  /// to `took` (index, result, its reloads before), a copy still following after four attempt
  /// times left to end beside the syncs; those out of service brought back beside the syncs
  /// (recover).
  void follow_copies(
    std::vector<copy>& copies, const std::string& dir, const std::vector<std::string>& up,
    const std::function<void(size_t, caf::expected<ops::estimator::exported_model::followed>&,
                             uint64_t)>& took);
  /// Runs `work` for copy i on a thread of its own, after joining the copy's previous one
  /// (ended: the copy was marked reloading until then). Callers hold follow_mutex_.
  void beside(size_t i, std::function<void()> work);
  /// Members up that no other copy in service holds, for copy i loaded again;
  /// errc::unavailable when there are none.
  caf::expected<ops::estimator::embedding_placement> placement_for(
    size_t i, const std::vector<std::string>& up);
  /// Copy i, out of service, brought back on a thread of its own: followed when its members
  /// are up and its shards answer, loaded again (reload) otherwise.
  void recover(size_t i, std::string dir);
  /// Loads copy i's export at `version` onto `where`, restores the chain under `dir`, then
  /// serve_again.
  void reload(size_t i, std::string dir, std::string version,
              ops::estimator::embedding_placement where);
  /// Copy i as `model` on `members` after `f` (its follow of `dir`): it follows the syncs that
  /// came meanwhile, then the last one under follow_mutex_, and takes requests again; it stays
  /// out of service on an error.
  void serve_again(size_t i, std::shared_ptr<ops::estimator::exported_model> model,
                   std::vector<std::string> members, bool reloaded, const std::string& dir,
                   caf::expected<ops::estimator::exported_model::followed> f);

  mutable std::mutex mutex_;
  /// Held by follow() and by a load's last catch-up: one sync at a time reaches the copies.
  std::mutex follow_mutex_;
  /// The thread of each copy's work beside the syncs (beside()); one at a time a copy, since
  /// syncs pass over a copy while it is reloading.
  std::vector<std::thread> reloads_;
  /// Entries are replaced whole under mutex_; a prediction holds the models it started with.
  std::vector<copy> copies_;
  std::atomic<size_t> next_{0};
  std::string dir_;
  ops::estimator::embedding_placement where_;
  replica_options options_;
  /// For more than one copy: a session on the cluster that asks its members' states.
  std::unique_ptr<ops::session> cluster_;
  /// Models replaced in copies_ are let go here, never under mutex_ nor on a sync's thread.
  /// Last: its thread ends before the rest goes.
  model_retirer retirer_;
};

} // namespace darcy::serving
