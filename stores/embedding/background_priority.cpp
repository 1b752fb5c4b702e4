#include "stores/embedding/background_priority.hpp"

#include <sys/resource.h>
#include <unistd.h>

namespace darcy::stores {

void lower_thread_priority(int nice) {
  // On Linux a nice value belongs to a thread: PRIO_PROCESS with a thread id sets that thread's.
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice);
}

} // namespace darcy::stores
