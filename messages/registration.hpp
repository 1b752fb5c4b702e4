// The one place where Darcy's message types and error category are registered with CAF. Every
// actor system of the project (nodes, CLI clients, tests) calls register_types before it starts,
// otherwise a remote peer answers with unexpected_response.
#pragma once

#include <caf/actor_system_config.hpp>

namespace darcy {

void register_types(caf::actor_system_config& cfg);

} // namespace darcy
