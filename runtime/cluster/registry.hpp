// The cluster registry, hosted by the seed node: who is a member, which services exist, and
// who wants to hear about changes. A member is down when its agent's connection drops or when
// no heartbeat arrived for `heartbeat_timeout`; its services are removed with it. A down member
// that heartbeats again is re-admitted under a new incarnation; one down for `prune_after` is
// forgotten.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "messages/cluster/cluster_interfaces.hpp"

namespace darcy::runtime {

struct registry_options {
  std::string seed;
  std::chrono::milliseconds heartbeat_interval{500};
  std::chrono::milliseconds heartbeat_timeout{3000};
  std::chrono::milliseconds prune_after{60000};
  /// The cluster secret's credential; empty: every process is trusted.
  std::string credential;
};

struct registry_state {
  struct member_record {
    member_info info;
    std::chrono::steady_clock::time_point last_seen;
    /// When the member went down or left (meaningless while up).
    std::chrono::steady_clock::time_point retired;
  };
  registry_options options;
  std::map<std::string, member_record> members;
  std::map<std::string, service_info> services;
  std::vector<caf::actor> subscribers;
  uint64_t last_incarnation = 0;
  /// Nodes (processes) that presented the credential.
  std::set<caf::node_id> trusted;
  static inline const char* name = "darcy.registry";
};

using registry_pointer = registry_actor::stateful_pointer<registry_state>;

registry_actor::behavior_type registry(registry_pointer self, registry_options options);

} // namespace darcy::runtime
