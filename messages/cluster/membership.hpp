// Cluster membership and name-service messages: what a node tells the seed's registry when it
// joins, what the registry stores per member and per service, and the events it publishes to
// subscribers. All fields are plain values so they serialize across nodes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

namespace darcy {

enum class member_state : uint8_t { up = 0, down = 1, left = 2 };

std::string to_string(member_state x);

/// One node of the cluster as the registry sees it.
struct member_info {
  std::string name;
  std::string host;
  uint16_t port = 0;
  int32_t pid = 0;
  int32_t gpus = 0;
  /// The node's agent (node_agent_actor); kept untyped to avoid a cycle with interfaces.hpp.
  caf::actor agent;
  /// Unix time in milliseconds.
  int64_t joined_ms = 0;
  member_state state = member_state::up;
  /// Why the member went down or left; empty while up.
  std::string reason;
  /// Assigned by the registry at each admission, strictly increasing (also across seed
  /// restarts). A member declared down and heard from again is re-admitted under a new one,
  /// and the actors of its older incarnation are fenced.
  uint64_t incarnation = 0;
  /// Where the node serves /metrics and its status page (on `host`); 0: it serves neither.
  uint16_t http_port = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, member_info& x) {
  return f(caf::meta::type_name("member_info"), x.name, x.host, x.port, x.pid, x.gpus, x.agent,
           x.joined_ms, x.state, x.reason, x.incarnation, x.http_port);
}

/// A named service: `name` resolves to `actor`, which lives on node `node`.
struct service_info {
  std::string name;
  std::string node;
  caf::actor actor;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, service_info& x) {
  return f(caf::meta::type_name("service_info"), x.name, x.node, x.actor);
}

enum class cluster_event_kind : uint8_t {
  member_up = 0,
  member_down = 1,
  member_left = 2,
  service_up = 3,
  service_down = 4,
};

std::string to_string(cluster_event_kind x);

/// Published by the registry to every subscriber. `service` is empty for member events.
struct cluster_event {
  cluster_event_kind kind = cluster_event_kind::member_up;
  std::string node;
  std::string service;
  caf::actor actor;
  std::string reason;
  /// The member's incarnation (member events only).
  uint64_t incarnation = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_event& x) {
  return f(caf::meta::type_name("cluster_event"), x.kind, x.node, x.service, x.actor, x.reason,
           x.incarnation);
}

/// A snapshot of the whole cluster, answered to `status`.
struct cluster_status {
  std::string seed;
  /// Unix time in milliseconds when the snapshot was taken (uptime = now_ms - joined_ms).
  int64_t now_ms = 0;
  std::vector<member_info> members;
  std::vector<service_info> services;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_status& x) {
  return f(caf::meta::type_name("cluster_status"), x.seed, x.now_ms, x.members, x.services);
}

} // namespace darcy
