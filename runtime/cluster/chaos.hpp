// Fault injection for tests and the CLI: kill a named actor, SIGKILL a node's process, and
// disrupt or heal a service. On a node started with --chaos, every actor its agent spawns sits
// behind a chaos gate, the handle its peers hold: the gate forwards everything until told to
// drop or delay a seeded fraction of the messages sent to the actor, so a disruption reaches
// a running job at once.
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

struct chaos_gate_state {
  struct held {
    caf::response_promise promise;
    caf::message content;
  };
  caf::actor target;
  /// Empty (all zero) while the gate only forwards.
  disruption plan;
  std::mt19937_64 rng;
  chaos_stats stats;
  uint64_t next_id = 0;
  std::map<uint64_t, held> delayed;
  static inline const char* name = "darcy.chaos_gate";
};

/// Links to `target` and lives exactly as long as it. Answers a chaos_command from its own
/// node with chaos_stats (from another node: errc::permission_denied); forwards, drops or
/// delays every other message by its plan, which starts as `plan`. Responses go straight from
/// `target` to the sender. Dynamically typed by necessity: it relays whatever `target`
/// understands.
caf::behavior chaos_gate(caf::stateful_actor<chaos_gate_state>* self, caf::actor target,
                         disruption plan);

/// The handle peers should be given for `self`: the chaos gate in front of it when a node agent
/// spawned it, else `self`. An actor that hands out its own handle (a chief announcing itself,
/// a worker reporting ready) hands out this one, so that chaos commands reach that traffic.
caf::actor public_handle(const caf::actor& self);

/// Records `gate` as the public handle of `target` until the gate exits.
void remember_gate(const caf::actor& target, const caf::actor& gate);

/// Sends `exit_reason::kill` to the actor registered as `service`.
caf::error kill_service(caf::actor_system& sys, const registry_actor& registry,
                        const std::string& service, std::chrono::milliseconds timeout);

/// Asks node `node` to SIGKILL its own process (works across hosts).
caf::error kill_node(caf::actor_system& sys, const registry_actor& registry,
                     const std::string& node, std::chrono::milliseconds timeout);

/// Sends `command` to the gate of `service` through the agent of the node hosting it, and
/// answers the gate's counts. Fails with errc::not_found when the service's actor has no gate
/// (its node runs without --chaos, or its agent did not spawn it), errc::invalid_argument for
/// a bad plan.
/// A disruption lasts until healed or until the service's actor exits: a restarted service
/// starts with a clean gate.
caf::expected<chaos_stats> command_gate(caf::actor_system& sys, const registry_actor& registry,
                                        const std::string& service, const chaos_command& command,
                                        std::chrono::milliseconds timeout);

/// Sends `command` to every chaos gate of node `node` through its agent (a disruption also
/// reaches the gates it spawns later, until healed), and answers their summed counts. The
/// node must run with --chaos (errc::not_found otherwise); errc::unknown_node for a node the
/// registry does not list.
caf::expected<chaos_stats> command_node(caf::actor_system& sys, const registry_actor& registry,
                                        const std::string& node, const chaos_command& command,
                                        std::chrono::milliseconds timeout);

/// Records that an injected fault fired: writes getpid() to `path` atomically (no-op when
/// empty), so that a test knows which process to SIGKILL.
void write_fault_pid(const std::string& path);

/// Fails with errc::invalid_argument unless both fractions are in [0, 1] and delay_ms >= 0.
caf::error validate(const disruption& plan);

} // namespace darcy::runtime
