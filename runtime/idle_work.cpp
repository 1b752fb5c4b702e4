#include "runtime/idle_work.hpp"

#include <pthread.h>
#include <sched.h>

namespace darcy::runtime {

bool enter_idle_priority() {
  sched_param none{};
  return ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &none) == 0;
}

std::optional<clockid_t> cpu_clock_of(std::thread& t) {
  clockid_t clock{};
  if (::pthread_getcpuclockid(t.native_handle(), &clock) != 0)
    return std::nullopt;
  return clock;
}

std::optional<std::chrono::nanoseconds> cpu_time(std::optional<clockid_t> clock) {
  timespec at{};
  if (!clock || ::clock_gettime(*clock, &at) != 0)
    return std::nullopt;
  return std::chrono::seconds{at.tv_sec} + std::chrono::nanoseconds{at.tv_nsec};
}

} // namespace darcy::runtime
