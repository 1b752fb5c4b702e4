// Registers every actor type of actors/ under its spawn name ("darcy.echo", ...), so that a
// node can spawn it for a local or remote supervisor. Call on every node's config.
#pragma once

#include "runtime/system_config.hpp"

namespace darcy::actors {

void register_actor_types(runtime::system_config& cfg);

} // namespace darcy::actors
