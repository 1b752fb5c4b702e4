// The actors that make an actor system a cluster node: the node agent, and the registry when
// the node is the seed. Shared by `darcy node` processes and in-process clusters (ops::session).
#pragma once

#include <optional>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "messages/cluster/cluster_interfaces.hpp"
#include "runtime/host_port.hpp"
#include "runtime/node_options.hpp"

namespace darcy::runtime {

struct node_services {
  node_agent_actor agent;
  /// The seed's registry: this node's own when it is the seed.
  registry_actor registry;
  bool is_seed = false;

  /// Stops the agent (and the actors it spawned) and, on the seed, the registry.
  void stop() const;
};

/// Spawns the agent, and the registry unless `seed_registry` is given, and records the
/// registry in the system's local actor registry under registry_key. `credential` is the
/// cluster secret's (empty: none).
node_services start_node_services(caf::actor_system& sys, const node_options& opts,
                                  std::optional<registry_actor> seed_registry,
                                  const std::string& credential = {});

/// Joins the registry as `opts.name`, reachable at `address` (port 0: not reachable from
/// other processes), with its status page at `http_port` on the same host (0: none). Fails
/// with errc::duplicate_node when the name is taken.
caf::expected<cluster_status> join_cluster(caf::actor_system& sys, const node_services& services,
                                           const node_options& opts, const host_port& address,
                                           uint16_t http_port = 0);

} // namespace darcy::runtime
