// The CAF configuration every Darcy actor system starts from: Darcy's message types and error
// category, the middleman (remote actors over TCP), and the runtime's spawnable actor types
// ("darcy.supervisor", "darcy.chaos_gate"). Apps add their own actor types before starting.
#pragma once

#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

namespace darcy::runtime {

class system_config : public caf::actor_system_config {
public:
  /// `threads` == 0 keeps CAF's default scheduler size.
  explicit system_config(std::string node_name = "local", size_t threads = 0);

  std::string node_name;
};

/// The node name of `sys`, or "local" when `sys` was not built from a system_config.
std::string node_name(const caf::actor_system& sys);

/// Unix time in milliseconds.
int64_t unix_ms();

} // namespace darcy::runtime
