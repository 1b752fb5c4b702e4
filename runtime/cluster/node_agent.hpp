// The node agent: one per node, published at the node's listen address. It answers pings and
// echoes, hands out the registry, spawns actor types by name for remote supervisors, runs
// messaging probes, keeps the node a member (joins, heartbeats, rejoins a restarted seed,
// fences its actors when re-admitted) and SIGKILLs its own process on request.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "messages/cluster/cluster_interfaces.hpp"
#include "runtime/cluster/probe.hpp"
#include "runtime/host_port.hpp"

namespace darcy::runtime {

struct node_agent_options {
  std::string name;
  /// Invalid until set_registry; the seed passes its own registry here.
  registry_actor registry;
  /// Zero disables heartbeats (the seed does not need them).
  std::chrono::milliseconds heartbeat_interval{0};
  /// Where the seed listens: a member that loses the registry reconnects there and joins
  /// again, with backoff. None: the registry is not re-sought.
  std::optional<host_port> seed;
  /// The cluster secret's credential: presented to a seed this node rejoins, and required
  /// (through the registry) of every process that manages this node. Empty: none.
  std::string credential;
  /// Spawned actors sit behind chaos gates (node_options::chaos).
  bool chaos_gates = false;
};

struct node_agent_state {
  node_agent_options options;
  /// Running actors spawned on request (monitored, removed on exit); stopped with the agent.
  std::shared_ptr<std::vector<caf::actor>> spawned;
  /// Runs messaging probes; spawned on first use.
  probe_actor probe;
  /// What this node joined as (set by join); rejoins send it again.
  std::optional<member_info> self;
  /// The incarnation the registry admitted this node under; 0 before joining.
  uint64_t incarnation = 0;
  /// Set when the registry's connection dropped, until this node has joined again.
  bool registry_lost = false;
  bool rejoining = false;
  std::chrono::milliseconds backoff{0};
  /// The node-wide disruption every new chaos gate starts with (`darcy-bench soak`).
  disruption node_plan;
  /// Gates spawned so far, which varies each gate's seed.
  uint64_t gates_spawned = 0;
  /// Processes the registry vouched for.
  std::set<caf::node_id> trusted;
  /// Spawns by (requesting process, request id): the answer once there is one, and the
  /// requests waiting for it.
  struct spawn_record {
    std::optional<caf::expected<caf::actor>> answer;
    std::vector<caf::typed_response_promise<caf::actor>> waiting;
  };
  using spawn_key = std::pair<caf::node_id, uint64_t>;
  std::map<spawn_key, spawn_record> spawns;
  /// The keys of `spawns`, oldest first; answered ones beyond 1,024 are forgotten.
  std::deque<spawn_key> spawn_order;
  static inline const char* name = "darcy.node_agent";
};

using node_agent_pointer = node_agent_actor::stateful_pointer<node_agent_state>;

node_agent_actor::behavior_type node_agent(node_agent_pointer self, node_agent_options options);

} // namespace darcy::runtime
