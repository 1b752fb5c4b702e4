// Blocking request/response for program edges (CLI commands, node start-up, tests): sends one
// request and waits at most `timeout`. Actors never call this; they use request().then().
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

#include <caf/expected.hpp>
#include <caf/scoped_actor.hpp>

namespace darcy::runtime {

/// Returns the single-value response of type R, or the error (sec::request_timeout when the
/// deadline passes, or whatever error the receiver answered).
template <class R, class Handle, class Duration, class... Ts>
caf::expected<R> ask(caf::actor_system& sys, const Handle& receiver, Duration timeout, Ts&&... xs) {
  caf::scoped_actor self{sys};
  caf::expected<R> result{caf::error{}};
  self->request(receiver, timeout, std::forward<Ts>(xs)...)
    .receive([&](R& x) { result = std::move(x); },
             [&](caf::error& err) { result = std::move(err); });
  return result;
}

/// The wait of a request sent again until `deadline`: `attempt`, or what is left when less,
/// and at least 1 ms.
inline std::chrono::milliseconds attempt_wait(std::chrono::milliseconds attempt,
                                              std::chrono::steady_clock::time_point deadline) {
  using std::chrono::milliseconds;
  auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
  return std::max(std::min(attempt, left), milliseconds{1});
}

/// A random id, never 0, that names a client's requests (or the first of them), so that
/// servers which apply an id once do not confuse two clients.
inline uint64_t random_request_id() {
  std::random_device device;
  uint64_t x = 0;
  while (x == 0)
    x = (uint64_t{device()} << 32) | device();
  return x;
}

} // namespace darcy::runtime
