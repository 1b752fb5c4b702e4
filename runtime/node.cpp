#include "runtime/node.hpp"

#include <unistd.h>
#include <csignal>
#include <iostream>

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/client.hpp"
#include "runtime/cluster/cluster_secret.hpp"
#include "runtime/http/http_server.hpp"
#include "runtime/http/status_page.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/node_services.hpp"
#include "runtime/tls.hpp"

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

void block_shutdown_signals() {
  auto signals = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

int wait_for_shutdown() {
  auto signals = shutdown_signals();
  int signal = 0;
  sigwait(&signals, &signal);
  return signal;
}

namespace {

caf::error serve_node(const node_options& opts, const config_hook& hook, const node_main& main) {
  system_config cfg{opts.name, opts.threads};
  if (hook)
    hook(cfg);
  caf::actor_system sys{cfg};
  sys.await_actors_before_shutdown(false);

  auto credential = opts.secret.empty() ? client_credential() : credential_of(opts.secret);
  // Reach the seed before listening, so that a bad --join or a wrong secret fails fast and
  // leaves no port open.
  std::optional<registry_actor> seed_registry;
  if (opts.join) {
    auto handles = connect_cluster(sys, *opts.join, opts.connect_timeout, credential);
    if (!handles)
      return make_error(errc::node_unreachable,
                        "cannot join " + to_string(*opts.join) + ": " + render(handles.error()));
    seed_registry = handles->registry;
  }
  auto services = start_node_services(sys, opts, seed_registry, credential);

  auto port = publish(services.agent, opts.listen.port, opts.listen.host.c_str());
  if (!port) {
    services.stop();
    return listen_error(opts, port.error());
  }
  host_port bound{opts.advertise.empty() ? opts.listen.host : opts.advertise, *port};

  // Stopped before the collector goes, and both before the actor system.
  std::unique_ptr<http_server> http;
  std::string http_host;
  auto running = process_metrics().add_collector([&sys](metric_sink& sink) {
    sink.gauge("darcy_actors_running", "Actors running in this node's process", {},
               static_cast<double>(sys.registry().running()));
  });
  if (opts.http) {
    auto where = *opts.http;
    if (where.host.empty())
      where.host = opts.listen.host;
    http_host = where.host == "0.0.0.0" || where.host == "::" ? bound.host : where.host;
    auto started = http_server::start(
      {.listen = where, .threads = 1},
      node_http_handler(sys, services.registry, opts.name, opts.connect_timeout));
    if (!started) {
      services.stop();
      return make_error(errc::io_error, "cannot serve the status page on " + to_string(where) +
                                          ": " + render(started.error()));
    }
    http = std::move(*started);
  }
  uint16_t http_port = http ? http->port() : 0;

  auto joined = join_cluster(sys, services, opts, bound, http_port);
  if (!joined) {
    services.stop();
    return make_error(errc::node_unreachable,
                      "cannot join the cluster as '" + opts.name + "': " + render(joined.error()));
  }

  std::cout << "darcy node " << opts.name << " listening on " << to_string(bound) << std::endl;
  if (http)
    std::cout << "darcy node " << opts.name << " serves its status page and /metrics at http://"
              << http_host << ":" << http_port << "/" << std::endl;

  auto err = main(sys, services);
  if (opts.join)
    ask<ok_atom>(sys, services.registry, opts.connect_timeout, leave_atom::value, opts.name);
  if (http)
    http->stop();
  services.stop();
  return err;
}

} // namespace

caf::error run_node(const node_options& opts, const config_hook& hook) {
  if (auto err = validate(opts))
    return err;
  block_shutdown_signals();
  return serve_node(opts, hook, [&](caf::actor_system&, const node_services&) {
    auto signal = wait_for_shutdown();
    log_info("darcy node {}: shutting down (signal {})", opts.name, signal);
    return caf::error{};
  });
}

caf::error run_node_with(const node_options& opts, const config_hook& hook, const node_main& main) {
  if (auto err = validate(opts))
    return err;
  return serve_node(opts, hook, main);
}

} // namespace darcy::runtime
