#include "runtime/node_services.hpp"

#include <unistd.h>

#include "gpu/device.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/node_agent.hpp"
#include "runtime/cluster/registry.hpp"

namespace darcy::runtime {

void node_services::stop() const {
  caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
  if (is_seed)
    caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
}

node_services start_node_services(caf::actor_system& sys, const node_options& opts,
                                  std::optional<registry_actor> seed_registry,
                                  const std::string& credential) {
  node_services result;
  result.is_seed = !seed_registry;
  if (seed_registry)
    result.registry = std::move(*seed_registry);
  else
    result.registry =
      sys.spawn(registry, registry_options{opts.name, opts.heartbeat_interval,
                                           opts.heartbeat_timeout, opts.prune_after, credential});
  sys.registry().put(registry_key, caf::actor_cast<caf::strong_actor_ptr>(result.registry));
  auto heartbeat = result.is_seed ? std::chrono::milliseconds{0} : opts.heartbeat_interval;
  result.agent = sys.spawn(node_agent, node_agent_options{opts.name, result.registry, heartbeat,
                                                          opts.join, credential, opts.chaos});
  return result;
}

caf::expected<cluster_status> join_cluster(caf::actor_system& sys, const node_services& services,
                                           const node_options& opts, const host_port& address,
                                           uint16_t http_port) {
  member_info self;
  self.name = opts.name;
  self.host = address.host;
  self.port = address.port;
  self.pid = static_cast<int32_t>(::getpid());
  self.gpus = gpu::device_count();
  self.agent = caf::actor_cast<caf::actor>(services.agent);
  self.http_port = http_port;
  return ask<cluster_status>(sys, services.agent, opts.connect_timeout, join_atom::value,
                             std::move(self));
}

} // namespace darcy::runtime
