// The supervisor: starts its children in order, watches them, and restarts them by restart type
// and strategy. More than `intensity` restarts within `period_ms` makes it stop its children
// and exit with errc::restart_intensity_exceeded, which its own parent sees as a crash.
// Children may live on other nodes: a lost node counts as a crash of every child on it, and the
// child is restarted on the first live node of its spec's `nodes` list.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "messages/cluster/cluster_interfaces.hpp"

namespace darcy::runtime {

struct supervisor_state {
  struct child_record {
    child_spec spec;
    /// Invalid while the child is not running.
    caf::actor actor;
    std::string node;
    uint32_t restarts = 0;
    /// Bumped on every start attempt and every stop; a spawn reply carrying an older value is
    /// stale, and the actor it names is stopped at once.
    uint64_t generation = 0;
  };
  supervisor_spec spec;
  std::vector<child_record> children;
  std::deque<std::chrono::steady_clock::time_point> restart_times;
  std::vector<caf::actor> subscribers;
  /// Nodes this supervisor lost its connection to, or that the registry declared down or
  /// gone, until the registry reports them up again. A restart avoids them while another
  /// wanted node is up, since the registry may not have noticed the loss yet and a spawn
  /// request to a dead node waits for its whole timeout.
  std::set<std::string> unreachable;
  /// Running children by id, shared with the exit hook that stops them with the supervisor.
  std::shared_ptr<std::map<std::string, caf::actor>> running;
  static inline const char* name = "darcy.supervisor";
};

using supervisor_pointer = supervisor_actor::stateful_pointer<supervisor_state>;

supervisor_actor::behavior_type supervisor(supervisor_pointer self, supervisor_spec spec);

} // namespace darcy::runtime
