// A group of actors placed on a cluster under a supervisor in this process: child i prefers
// the i-th target's node (cycling through the targets), then the others in turn. A child whose
// node dies (or is declared down) is started again on another live node and registered under
// its service name again. The embedding shards and the MoE experts are such groups.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/expected.hpp>
#include <caf/message.hpp>

#include "messages/cluster/cluster_interfaces.hpp"
#include "runtime/cluster/spawn_on.hpp"

namespace darcy::ops {

class session;

struct group_spec {
  /// Unique in the cluster: the supervisor is "<prefix>.<kind>s", child i has id "<kind>.<i>"
  /// and service "<prefix>.<kind>.<i>".
  std::string prefix;
  std::string kind;
  /// The registered actor type of every child.
  std::string factory;
  size_t count = 0;
  /// Child i's spawn arguments.
  std::function<caf::message(size_t)> args;
};

struct supervised_group {
  supervisor_actor supervisor;
  /// The children as first started, in child order.
  std::vector<caf::actor> actors;
  std::vector<std::string> services;
};

/// The id of child i of a group of `kind`: "<kind>.<i>".
std::string group_child_id(const std::string& kind, size_t i);

/// Starts the group on `targets` (which may repeat a node) and waits until every child runs.
/// Fails with the supervisor's reason when it gives up, or errc::timeout naming the last
/// child exit and its reason (children that quit as they start are never announced).
caf::expected<supervised_group> start_supervised_group(
  session& s, const std::vector<runtime::spawn_target>& targets, const group_spec& spec);

} // namespace darcy::ops
