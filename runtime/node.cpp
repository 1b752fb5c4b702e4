#include "runtime/node.hpp"

#include <csignal>
#include <iostream>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/client.hpp"
#include "runtime/log.hpp"
#include "runtime/node_services.hpp"

namespace darcy::runtime {

namespace {

sigset_t shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

caf::error listen_error(const node_options& opts, const caf::error& err) {
  return make_error(errc::io_error, "cannot listen on " + to_string(opts.listen) +
                                      ": address in use or not available (" + render(err) + ")");
}

} // namespace

caf::error run_node(const node_options& opts, const config_hook& hook) {
  if (auto err = validate(opts))
    return err;
  auto signals = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  system_config cfg{opts.name, opts.threads};
  if (hook)
    hook(cfg);
  caf::actor_system sys{cfg};
  sys.await_actors_before_shutdown(false);

  // Reach the seed before listening, so that a bad --join fails fast and leaves no port open.
  std::optional<cluster_handles> cluster;
  if (opts.join) {
    auto where = to_string(*opts.join);
    auto agent = sys.middleman().remote_actor<node_agent_actor>(opts.join->host, opts.join->port);
    if (!agent)
      return make_error(errc::node_unreachable,
                        "cannot join " + where + ": no Darcy node answers there");
    auto registry = ask<registry_actor>(sys, *agent, opts.connect_timeout, registry_atom::value);
    if (!registry)
      return make_error(errc::node_unreachable,
                        "cannot join " + where + ": " + render(registry.error()));
    cluster = cluster_handles{std::move(*agent), std::move(*registry)};
  }

  std::optional<registry_actor> seed_registry;
  if (cluster)
    seed_registry = cluster->registry;
  auto services = start_node_services(sys, opts, seed_registry);

  auto port = sys.middleman().publish(services.agent, opts.listen.port,
                                      opts.listen.host.c_str(), true);
  if (!port) {
    services.stop();
    return listen_error(opts, port.error());
  }
  host_port bound{opts.listen.host, *port};

  auto joined = join_cluster(sys, services, opts, bound);
  if (!joined) {
    services.stop();
    return make_error(errc::node_unreachable, "cannot join the cluster as '" + opts.name +
                                                "': " + render(joined.error()));
  }

  std::cout << "darcy node " << opts.name << " listening on " << to_string(bound) << std::endl;

  int signal = 0;
  sigwait(&signals, &signal);
  log_info("darcy node {}: shutting down (signal {})", opts.name, signal);
  if (cluster)
    ask<ok_atom>(sys, services.registry, opts.connect_timeout, leave_atom::value, opts.name);
  services.stop();
  return {};
}

} // namespace darcy::runtime
