// Connecting to a running cluster from outside it (CLI commands, tests, remote ops): reach the
// seed's agent at HOST:PORT and obtain the registry.
#pragma once

#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "messages/cluster/cluster_interfaces.hpp"
#include "runtime/host_port.hpp"

namespace darcy::runtime {

struct cluster_handles {
  node_agent_actor agent;
  registry_actor registry;
};

/// Reaches the seed and presents `credential` to its registry (this process's client
/// credential by default). Fails with errc::node_unreachable naming the address when nothing
/// answers there, and with errc::permission_denied when the seed refuses the credential.
/// `sys` must have the middleman loaded (system_config does).
caf::expected<cluster_handles> connect_cluster(caf::actor_system& sys, const host_port& seed,
                                               std::chrono::milliseconds timeout);
caf::expected<cluster_handles> connect_cluster(caf::actor_system& sys, const host_port& seed,
                                               std::chrono::milliseconds timeout,
                                               const std::string& credential);

/// The agent of the node listening at `where`; errc::node_unreachable otherwise.
caf::expected<node_agent_actor> connect_agent(caf::actor_system& sys, const host_port& where);

/// Resolves `service` through the registry; errc::unknown_service when it is not registered.
caf::expected<service_info> resolve(caf::actor_system& sys, const registry_actor& registry,
                                    const std::string& service, std::chrono::milliseconds timeout);

} // namespace darcy::runtime
