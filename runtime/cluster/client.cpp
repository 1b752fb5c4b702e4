#include "runtime/cluster/client.hpp"

#include <caf/io/middleman.hpp>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/cluster_secret.hpp"
#include "runtime/tls.hpp"

namespace darcy::runtime {

caf::expected<node_agent_actor> connect_agent(caf::actor_system& sys, const host_port& where) {
  auto failures = tls_client_handshake_failures();
  auto agent = connect_remote<node_agent_actor>(sys, where.host, where.port);
  // CAF reports a failed TLS handshake as a refused connection or as one that ended, depending
  // on when OpenSSL saw the failure: the count of failed handshakes tells them apart.
  if (!agent && tls_client_handshake_failures() != failures)
    return make_error(errc::node_unreachable,
                      "the TLS handshake with the node at " + to_string(where) + " failed (" +
                        last_tls_client_handshake_failure() +
                        "): both sides need a certificate of the same CA (--tls-dir)");
  if (!agent && agent.error() == caf::sec::disconnect_during_handshake)
    return make_error(errc::node_unreachable,
                      "the node at " + to_string(where) +
                        " ended the handshake: with TLS (--tls-dir) on either side, both need a "
                        "certificate of the same CA");
  if (!agent)
    return make_error(errc::node_unreachable, "no Darcy node answers at " + to_string(where) +
                                                " (" + render(agent.error()) + ")");
  return std::move(*agent);
}

caf::expected<cluster_handles> connect_cluster(caf::actor_system& sys, const host_port& seed,
                                               std::chrono::milliseconds timeout) {
  return connect_cluster(sys, seed, timeout, client_credential());
}

caf::expected<cluster_handles> connect_cluster(caf::actor_system& sys, const host_port& seed,
                                               std::chrono::milliseconds timeout,
                                               const std::string& credential) {
  auto agent = connect_agent(sys, seed);
  if (!agent)
    return std::move(agent.error());
  auto registry = ask<registry_actor>(sys, *agent, timeout, registry_atom::value);
  if (!registry)
    return make_error(errc::node_unreachable, "the node at " + to_string(seed) +
                                                " gave no registry: " + render(registry.error()));
  auto hello = ask<ok_atom>(sys, *registry, timeout, hello_atom::value, credential);
  if (!hello)
    return std::move(hello.error());
  return cluster_handles{std::move(*agent), std::move(*registry)};
}

caf::expected<service_info> resolve(caf::actor_system& sys, const registry_actor& registry,
                                    const std::string& service, std::chrono::milliseconds timeout) {
  return ask<service_info>(sys, registry, timeout, lookup_atom::value, service);
}

} // namespace darcy::runtime
