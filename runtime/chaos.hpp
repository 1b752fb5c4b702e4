// Fault injection for tests and the CLI: kill a named actor, SIGKILL a node's process, and
// disrupt a service by putting a chaos proxy in front of it that drops or delays a seeded
// fraction of the messages. The proxy forwards everything else unchanged, responses included.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/expected.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "messages/cluster/chaos_messages.hpp"
#include "messages/cluster/cluster_interfaces.hpp"

namespace darcy::runtime {

struct chaos_proxy_state {
  struct held {
    caf::response_promise promise;
    caf::message content;
  };
  caf::actor target;
  disruption plan;
  std::mt19937_64 rng;
  chaos_stats stats;
  uint64_t next_id = 0;
  std::map<uint64_t, held> delayed;
  static inline const char* name = "darcy.chaos_proxy";
};

/// Answers (stats_atom) with chaos_stats; forwards, drops or delays every other message.
/// Dynamically typed by necessity: it relays whatever `target` understands.
caf::behavior chaos_proxy(caf::stateful_actor<chaos_proxy_state>* self, caf::actor target,
                          disruption plan);

/// Sends `exit_reason::kill` to the actor registered as `service`.
caf::error kill_service(caf::actor_system& sys, const registry_actor& registry,
                        const std::string& service, std::chrono::milliseconds timeout);

/// Asks node `node` to SIGKILL its own process (works across hosts).
caf::error kill_node(caf::actor_system& sys, const registry_actor& registry,
                     const std::string& node, std::chrono::milliseconds timeout);

/// Spawns a chaos proxy on the node hosting `service` and registers it under the service's
/// name, so clients that resolve through the registry go through it. Returns the proxy.
/// The supervisor's next restart of the service, or register, replaces it.
caf::expected<caf::actor> disrupt(caf::actor_system& sys, const registry_actor& registry,
                                  const std::string& service, const disruption& plan,
                                  std::chrono::milliseconds timeout);

/// Records that an injected fault fired: writes getpid() to `path` atomically (no-op when
/// empty), so that a test knows which process to SIGKILL.
void write_fault_pid(const std::string& path);

/// Fails with errc::invalid_argument unless both fractions are in [0, 1] and delay_ms >= 0.
caf::error validate(const disruption& plan);

} // namespace darcy::runtime
