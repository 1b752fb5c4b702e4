// Fault-injection messages: how a chaos proxy disrupts traffic to a service, and the counts it
// reports. Drop and delay decisions come from a seeded RNG, so a run with the same seed and the
// same message order drops and delays the same messages.
#pragma once

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

namespace darcy {

struct disruption {
  /// Fraction of messages silently dropped (a dropped request never gets a response).
  double drop = 0;
  /// Fraction of the remaining messages delayed by delay_ms.
  double delay = 0;
  int64_t delay_ms = 0;
  uint64_t seed = 1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, disruption& x) {
  return f(caf::meta::type_name("disruption"), x.drop, x.delay, x.delay_ms, x.seed);
}

struct chaos_stats {
  uint64_t forwarded = 0;
  uint64_t dropped = 0;
  uint64_t delayed = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chaos_stats& x) {
  return f(caf::meta::type_name("chaos_stats"), x.forwarded, x.dropped, x.delayed);
}

} // namespace darcy
