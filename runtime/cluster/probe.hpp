// The messaging probe: runs echo round trips against any actor that answers
// (echo_atom, std::string) -> std::string, with at most `window` requests in flight, and
// reports each round trip's latency. Used by the node agent and by `darcy-bench messaging`.
#pragma once

#include <caf/actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/cluster/probe_messages.hpp"

namespace darcy::runtime {

using probe_actor =
  caf::typed_actor<caf::replies_to<probe_atom, caf::actor, probe_spec>::with<probe_result>>;

/// Answers one probe per request; `spec.host`/`port` are ignored (the target is given).
probe_actor::behavior_type probe_driver(probe_actor::pointer self);

} // namespace darcy::runtime
