// The context that travels with a request through every hop of a served model (the paper's RSO
// context): who asks (principal, app), when the answer stops being useful (deadline) and a
// trace id that names the request in every log line. Any service may carry it; remote_run
// (runtime/cluster/remote_run.hpp) enforces its deadline on the caller's side.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

namespace darcy {

struct request_context {
  /// Absolute deadline in microseconds of the system clock since the epoch; 0: none. Absolute,
  /// so that time spent queueing on any hop counts; nodes must keep their clocks in step (NTP).
  int64_t deadline_us = 0;
  std::string principal;
  std::string app;
  std::string trace_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_context& x) {
  return f(caf::meta::type_name("request_context"), x.deadline_us, x.principal, x.app, x.trace_id);
}

/// Now, in the unit of request_context::deadline_us.
inline int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

/// The deadline `ms` milliseconds from now.
inline int64_t deadline_in(std::chrono::milliseconds ms) {
  return now_us() + ms.count() * 1000;
}

/// Time left before the deadline (zero when passed); `none` when there is no deadline.
inline std::chrono::microseconds time_left(const request_context& ctx,
                                           std::chrono::microseconds none) {
  if (ctx.deadline_us == 0)
    return none;
  auto left = ctx.deadline_us - now_us();
  return std::chrono::microseconds{left > 0 ? left : 0};
}

inline bool expired(const request_context& ctx) {
  return ctx.deadline_us != 0 && now_us() >= ctx.deadline_us;
}

} // namespace darcy
