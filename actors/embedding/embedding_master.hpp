// The embedding master: routes batches of raw string keys to the shards that own them and
// merges the answers. It keeps no rows, only each embedding's config, and bounds its work:
// at most `max_in_flight` fan-outs run at once and `max_queued` more wait.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "actors/embedding/key_routing.hpp"
#include "actors/fan_out.hpp"
#include "messages/embedding/embedding_interfaces.hpp"

namespace darcy::actors {

struct embedding_master_options {
  std::vector<embedding_shard_actor> shards;
  size_t max_in_flight = 64;
  size_t max_queued = 1024;
  /// A shard request that gets no answer within attempt_timeout is sent again (the same
  /// request id, so that the shard applies it once), waiting twice as long each time but never
  /// longer than shard_timeout, up to `attempts` times in all. Messages lost on the way (a
  /// disrupted link) then cost a retry instead of the batch.
  std::chrono::milliseconds attempt_timeout{2000};
  uint32_t attempts = 4;
  /// Attempts in all (at least `attempts`) of a shard's part of a save, restore or sync: its
  /// work grows with the tables and its retries queue behind it, so a part that takes seconds
  /// is waited for by the doubling attempts, while a lost message still costs one attempt.
  uint32_t file_attempts = 10;
  std::chrono::milliseconds shard_timeout{30000};
  /// False when no message to or from a shard can be lost: every shard lives in this process
  /// with nothing in between that drops messages (no chaos gate). Requests then wait for their
  /// answer without a timer, since CAF answers a request to a terminated local actor with
  /// request_receiver_down. This spares the actor clock a timer per shard request, and the
  /// master a timeout message per request an attempt_timeout later.
  bool shards_may_lose_messages = true;
  /// Registry names of the shards, in shard order, when they are supervised services: a
  /// shard that comes back under its name is recovered from `checkpoint_dir`. Empty: shards
  /// are fixed.
  std::vector<std::string> shard_services;
  std::string checkpoint_dir;
  /// Incremental checkpoints: the changed keys a shard tracks per embedding; past them it
  /// writes its whole part instead of a delta.
  uint64_t max_tracked_keys = uint64_t{1} << 20;
  /// Creates, restores and syncs put every table in the shards' memory, whatever backend its
  /// config or the checkpoint's configs name: a serving copy's rows are its own, never the
  /// training run's LevelDB folders (which a restore would empty) or its Redis, and an
  /// evaluator's never the databases of the ps beside it.
  bool tables_in_memory = false;
};

struct embedding_master_state {
  embedding_master_options options;
  std::map<std::string, de_config> configs;
  size_t in_flight = 0;
  /// A fan-out waiting for a free in-flight slot: `run` starts it, `refuse` answers its
  /// caller with an error instead.
  struct queued_work {
    std::function<void()> run;
    std::function<void(caf::error)> refuse;
  };
  /// Fan-outs waiting for a free in-flight slot, oldest first.
  std::deque<queued_work> queued;
  /// While a checkpoint is saved or restored, or a shard refilled, new requests wait in
  /// `queued`; `on_drained` runs once the requests in flight have finished.
  bool exclusive = false;
  std::function<void()> on_drained;
  /// Saves and restores that arrived while other exclusive work ran or a shard was down, oldest
  /// first (at most options.max_queued). Each runs after the one before it, once every lost
  /// shard is back and refilled, so that a restore reaches the new shard and not the lost one.
  std::deque<std::function<void()>> exclusive_waiting;
  uint64_t checkpoints = 0;
  /// Shard requests sent again after a timeout, since the start.
  uint64_t retries = 0;
  /// The next id of a shard request that changes state (update, load_part); unique across
  /// masters with high probability (a random start).
  uint64_t next_request_id = 0;
  /// Supervised shards that went down and have not been recovered yet: requests wait (in
  /// `queued`, so bounded by max_queued) until they are back.
  std::set<size_t> down;
  /// Shards that came back as new actors and still need their rows.
  std::set<size_t> to_recover;
  /// Updates admitted since the start, or since the last save to or restore from
  /// options.checkpoint_dir: the rows a shard refilled from that checkpoint would lack.
  uint64_t updates_since_checkpoint = 0;
  /// Shards replaced by a new actor and refilled, since the start.
  uint64_t recovered_shards = 0;
  /// The chain of incremental checkpoints this master saves on: its root, its newest
  /// checkpoint and the deltas on its full one. Empty after a restore or a refill, when the
  /// shards' tracked changes no longer lead from it.
  std::string chain_dir, chain_head;
  uint32_t chain_deltas = 0;
  /// The checkpoint the tables last came from, by restore or sync: the base the next sync
  /// must have. Empty before the first restore, and after a sync that failed on some shards.
  std::string applied_head;
  /// Non-empty while the shards hold rows of different times: a shard was refilled from the
  /// checkpoint (or empty) after the others had taken updates. Says which and why. Lookups,
  /// updates, saves and top-k then fail with errc::node_unreachable until a restore succeeds,
  /// so that no caller trains on, or saves, a model that is half older.
  std::string diverged;
  /// Lookups kept for backward, oldest first, at most max_pending_lookups.
  struct pending_lookup {
    uint64_t handle = 0;
    std::shared_ptr<routed_batch> batch;
  };
  std::deque<pending_lookup> pending;
  /// Running fan-outs, so that those waiting on a shard that went down fail at once.
  std::vector<std::weak_ptr<fan_out_state>> fan_outs;
  static inline const char* name = "darcy.embedding_master";
};

using embedding_master_pointer = embedding_master_actor::stateful_pointer<embedding_master_state>;

embedding_master_actor::behavior_type embedding_master(embedding_master_pointer self,
                                                       embedding_master_options options);

} // namespace darcy::actors
