// Stopping the actors an actor owns when it exits (a supervisor's children, a node agent's
// spawns, a serving root's shard servers), safely also while the actor system shuts down.
#pragma once

#include <functional>
#include <vector>

#include <caf/abstract_actor.hpp>
#include <caf/actor.hpp>

namespace darcy::runtime {

/// Once `owner` exits, for whatever reason, sends exit_reason::user_shutdown to every actor that
/// `targets()` returns at that moment. The exit messages go through the exiting actor's
/// execution unit, never straight to CAF's scheduler queue: an actor still alive when the actor
/// system shuts down exits while the scheduler holds that queue's lock, where
/// caf::anon_send_exit from an attach_functor deadlocks.
void stop_on_exit(caf::abstract_actor& owner, std::function<std::vector<caf::actor>()> targets);

} // namespace darcy::runtime
