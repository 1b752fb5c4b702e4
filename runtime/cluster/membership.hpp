// The node agent's side of membership: joining the registry, heartbeats that learn the node's
// incarnation, fencing the node's actors when it was declared down and re-admitted (or
// forgotten and joined again), and rejoining a restarted seed with backoff.
#pragma once

#include "runtime/cluster/node_agent.hpp"

namespace darcy::runtime {

/// Joins through the agent's registry as `info` and remembers it for later rejoins.
caf::result<cluster_status> join_registry(node_agent_pointer self, member_info info);

/// One heartbeat, or one attempt to reach the seed again while the registry is lost. Schedules
/// the next tick itself.
void membership_tick(node_agent_pointer self);

/// Called when the agent's monitor on the registry fires.
void on_registry_lost(node_agent_pointer self, const caf::error& reason);

} // namespace darcy::runtime
