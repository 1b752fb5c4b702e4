// A Darcy node process: an actor system with the middleman, a node agent published at the
// listen address, and either the cluster registry (seed) or a membership in a seed's cluster.
// run_node blocks until SIGTERM or SIGINT, then leaves the cluster and stops its actors.
#pragma once

#include <functional>

#include <caf/actor_system.hpp>
#include <caf/error.hpp>

#include "runtime/node_options.hpp"
#include "runtime/node_services.hpp"
#include "runtime/system_config.hpp"

namespace darcy::runtime {

/// Called on the node's config before the actor system starts, to add app actor types.
using config_hook = std::function<void(system_config&)>;

/// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts later, so that
/// wait_for_shutdown receives them. Call from the main thread before any other thread starts.
void block_shutdown_signals();

/// Waits for SIGTERM or SIGINT (blocked first by block_shutdown_signals) and returns it.
int wait_for_shutdown();

/// Starts the node and prints one line "darcy node NAME listening on HOST:PORT" to stdout once
/// it serves requests (with the real port when opts.listen.port was 0). Returns an error that
/// names the problem when the node cannot listen or join; none after a clean shutdown.
/// Must be called from the main thread before any other thread starts: it blocks SIGTERM and
/// SIGINT so that it can wait for them.
caf::error run_node(const node_options& opts, const config_hook& hook = {});

/// A program that runs on a node once it serves requests (a role of a distributed job); the
/// node leaves the cluster when it returns.
using node_main = std::function<caf::error(caf::actor_system&, const node_services&)>;

/// As run_node, printing the same line, but runs `main` instead of waiting for a signal, and
/// returns its error. SIGTERM and SIGINT keep their default action: they end the process.
caf::error run_node_with(const node_options& opts, const config_hook& hook, const node_main& main);

} // namespace darcy::runtime
