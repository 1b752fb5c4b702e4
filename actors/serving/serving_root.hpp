// The root of one served model: loads export versions in the paper's order (shard servers
// first, under a supervisor that restarts a crashed one from the export; the root sub-model
// last), hot-swaps them, and answers top-k by projecting the query, fanning it out to the
// shards through remote_run with the request's context, and merging. Interface and contract:
// serving_root_actor (messages/serving/serving_interfaces.hpp).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actors/serving/access_policy.hpp"
#include "actors/serving/root_model.hpp"
#include "compute/top_k.hpp"
#include "messages/cluster/cluster_interfaces.hpp"
#include "messages/serving/serving_interfaces.hpp"

namespace darcy::actors {

struct serving_root_config {
  std::string model;
  /// The model's export folder, EXPORTS/<model>.
  std::string model_dir;
  /// Nodes for the shard servers: shard i prefers nodes[i % n], then the next ones. Empty:
  /// this process.
  std::vector<std::string> nodes;
  /// The spawn name of the shard servers (serving_shard_state::name); a test may name a
  /// registered stand-in, such as a shard behind a chaos gate.
  std::string shard_factory = "darcy.serving_shard";
  /// Search parameters of every shard (serving_shard_config).
  uint32_t probes = 8;
  uint32_t rerank = 30;
  uint32_t ef = 64;
  /// Batches each shard may have unanswered; queries that arrive meanwhile wait and leave
  /// together, at most shard_batch_limit to a batch. 0: one message per query, none waits.
  uint32_t shard_batches_in_flight = 1;
  uint32_t shard_batch_limit = 64;
  /// A shard that has not answered a batch (or query) within its attempt time is asked again,
  /// then after 2, 3... times as long, until the deadline: a message lost on its way costs
  /// the attempt time instead of the deadline. The attempt time is twice the shard's 99th
  /// percentile round trip so far, and at least this. 0: asked once.
  uint32_t shard_attempt_ms = 0;
  access_rules access;
  /// Load the newest version at start, as if a manager asked.
  bool load_newest = true;
};

/// The queries waiting for one shard server, and its batches out.
struct shard_lane {
  std::deque<uint64_t> queued;
  uint32_t in_flight = 0;
  /// Round trips of the batches answered at their first attempt: the attempt time is drawn
  /// from these, so that resent batches do not raise it.
  latency_histogram first_attempts;
};

/// One loaded (or loading) version.
struct served_version {
  std::string version;
  /// Also the prefix of the shards' service names.
  std::string supervisor_name;
  supervisor_actor supervisor;
  /// Invalid while a shard is down.
  std::vector<serving_shard_actor> shards;
  std::vector<shard_health> health;
  std::vector<shard_lane> lanes;
  std::vector<bool> ready;
  /// Set once every shard answered: the version serves from then on.
  std::shared_ptr<const root_model> root;
  uint64_t in_flight = 0;
  bool retired = false;
  /// Items added while the version serves (root_items.hpp): ids from the export's item count
  /// on. Only an add every shard confirmed is in `added_names`; hits of other added ids are
  /// never served.
  std::unordered_map<uint64_t, std::string> added_names;
  std::unordered_map<std::string, uint64_t> added_ids;
  /// Each shard's confirmed items, sent again to a restarted shard server.
  std::vector<shard_items> added_by_shard;
  /// Names of adds not yet confirmed, and the next id to give.
  std::unordered_set<std::string> adding;
  uint64_t next_item = 0;
};

struct serving_root_state {
  struct pending_topk {
    std::shared_ptr<served_version> version;
    caf::typed_response_promise<topk_response> promise;
    /// What every shard is asked (the projected query, with the request's context).
    shard_query query;
    std::string principal;
    uint32_t k = 0;
    bool allow_partial = false;
    std::vector<std::vector<compute::hit>> hits;
    std::vector<bool> answered;
    size_t open = 0;
    caf::error first_error;
  };
  serving_root_config config;
  access_policy access;
  std::chrono::steady_clock::time_point started;
  std::shared_ptr<served_version> current;
  std::shared_ptr<served_version> loading;
  std::optional<caf::typed_response_promise<std::string>> load_promise;
  std::vector<std::shared_ptr<served_version>> retired;
  std::map<uint64_t, pending_topk> pending;
  /// (deadline_us, request) of the requests with a deadline, earliest on top; an entry stays
  /// until its deadline even when its request is answered before.
  std::priority_queue<std::pair<int64_t, uint64_t>, std::vector<std::pair<int64_t, uint64_t>>,
                      std::greater<>>
    deadlines;
  /// The deadline the root's one timer is set for; 0: none.
  int64_t timer_us = 0;
  uint64_t next_request = 1;
  std::string last_error;
  std::vector<std::string> events;
  static inline const char* name = "darcy.serving_root";
};

using serving_root_pointer = serving_root_actor::stateful_pointer<serving_root_state>;

serving_root_actor::behavior_type serving_root(serving_root_pointer self,
                                               serving_root_config config);

/// Logs `text` and keeps it among the root's last events (model_status::events).
void log_event(serving_root_pointer self, std::string text);

} // namespace darcy::actors
