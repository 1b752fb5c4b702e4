// The echo service: answers (echo, payload) with its node's name and the payload. It is the
// smallest supervised service, used by the demo, the cluster tests and fault-injection drills.
#pragma once

#include "messages/cluster/cluster_interfaces.hpp"

namespace darcy::actors {

/// The spawn name of the echo service (it has no state to carry the constant).
inline constexpr const char* echo_service_name = "darcy.echo";

echo_actor::behavior_type echo_service(echo_actor::pointer self);

} // namespace darcy::actors
