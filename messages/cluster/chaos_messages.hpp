// Fault-injection messages: how a chaos gate disrupts traffic to the actor behind it, the
// commands that change its plan, and the counts it reports. Drop and delay decisions come from
// a seeded RNG, so a run with the same seed and the same message order drops and delays the
// same messages.
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

enum class chaos_op : uint8_t {
  /// Replace the gate's plan (its counts start again from zero).
  disrupt = 0,
  /// Forward everything again; answers the counts of the plan that ends.
  heal = 1,
  /// Answer the counts; change nothing.
  stats = 2,
};

inline std::string to_string(chaos_op x) {
  switch (x) {
    case chaos_op::disrupt:
      return "disrupt";
    case chaos_op::heal:
      return "heal";
    default:
      return "stats";
  }
}

/// Sent to a node agent with the gate's handle; the agent passes it to the gate.
struct chaos_command {
  chaos_op op = chaos_op::stats;
  disruption plan;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chaos_command& x) {
  return f(caf::meta::type_name("chaos_command"), x.op, x.plan);
}

} // namespace darcy
