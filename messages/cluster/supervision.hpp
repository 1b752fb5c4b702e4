// Supervision messages: child specs and supervisor specs (which nest: a child whose factory
// is "darcy.supervisor" takes a supervisor_spec as its argument), and the events a supervisor
// publishes to its subscribers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/message.hpp>
#include <caf/meta/type_name.hpp>

namespace darcy {

/// permanent: always restarted. transient: restarted only after an abnormal exit.
/// temporary: never restarted.
enum class restart_type : uint8_t { permanent = 0, transient = 1, temporary = 2 };

/// one_for_one: restart the failed child. one_for_all: restart every child.
/// rest_for_one: restart the failed child and the children started after it.
enum class restart_strategy : uint8_t { one_for_one = 0, one_for_all = 1, rest_for_one = 2 };

std::string to_string(restart_type x);
std::string to_string(restart_strategy x);

/// In child_spec::nodes: any live member.
inline constexpr const char* any_node = "*";

struct child_spec {
  /// Unique within its supervisor.
  std::string id;
  /// A name registered with actor_system_config::add_actor_type on every node.
  std::string factory;
  caf::message args;
  /// Nodes to place the child on, in order of preference; the first live one wins. any_node
  /// ("*") stands for any live member, members that joined later included, the seed last.
  /// Empty: the supervisor's own node.
  std::vector<std::string> nodes;
  restart_type restart = restart_type::permanent;
  /// When set, the child is registered under this name after every (re)start.
  std::string service;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, child_spec& x) {
  return f(caf::meta::type_name("child_spec"), x.id, x.factory, x.args, x.nodes, x.restart,
           x.service);
}

struct supervisor_spec {
  std::string name;
  restart_strategy strategy = restart_strategy::one_for_one;
  /// More than `intensity` restarts within `period_ms` makes the supervisor give up: it stops
  /// its children and exits with errc::restart_intensity_exceeded, escalating to its parent.
  uint32_t intensity = 3;
  int64_t period_ms = 5000;
  /// Started in order; stopped in reverse order.
  std::vector<child_spec> children;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, supervisor_spec& x) {
  return f(caf::meta::type_name("supervisor_spec"), x.name, x.strategy, x.intensity, x.period_ms,
           x.children);
}

/// A child as its supervisor sees it; `actor` is invalid while it is not running.
struct child_info {
  std::string id;
  std::string node;
  caf::actor actor;
  uint32_t restarts = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, child_info& x) {
  return f(caf::meta::type_name("child_info"), x.id, x.node, x.actor, x.restarts);
}

enum class supervisor_event_kind : uint8_t {
  child_started = 0,
  child_restarted = 1,
  child_exited = 2,
  gave_up = 3,
};

std::string to_string(supervisor_event_kind x);

struct supervisor_event {
  supervisor_event_kind kind = supervisor_event_kind::child_started;
  std::string supervisor;
  std::string child;
  std::string node;
  caf::actor actor;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, supervisor_event& x) {
  return f(caf::meta::type_name("supervisor_event"), x.kind, x.supervisor, x.child, x.node, x.actor,
           x.reason);
}

} // namespace darcy
