#include "runtime/thread_systems.hpp"

#include <caf/logger.hpp>

namespace darcy::runtime {

void let_go_of_actor_systems() {
  caf::logger::set_current_actor_system(nullptr);
}

} // namespace darcy::runtime
