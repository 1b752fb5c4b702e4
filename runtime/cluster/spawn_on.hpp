// Spawning actors on the cluster's nodes from a program edge (ops/, benchmarks, the CLI): by the
// spawn name an actor type is registered under (its state's `name` constant), with a typed
// handle back or an error naming the node. A group spawn rolls back: when one member fails, the
// ones already started are stopped, so a failed call leaves nothing running.
//
//   auto targets = runtime::live_targets(*status, {});            // every member that is up
//   auto shards = runtime::spawn_group<embedding_shard_actor>(
//     sys, targets, timeout, embedding_shard_state::name,
//     [](size_t i) { return caf::make_message(static_cast<uint32_t>(i)); }, count);
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/message.hpp>

#include "messages/cluster/cluster_interfaces.hpp"

namespace darcy::runtime {

/// A node to spawn on: its name (for errors) and its agent.
struct spawn_target {
  std::string node;
  node_agent_actor agent;
};

/// The order in which child `i` of a group placed over `nodes` prefers them: its own node,
/// nodes[i % n], then the next ones, wrapping around; each name once. Empty for no nodes.
std::vector<std::string> preferred_nodes(const std::vector<std::string>& nodes, size_t i);

/// The members of `status` that are up, in the registry's order, restricted to `only` when it
/// is not empty. Fails with errc::no_live_node when none is left.
caf::expected<std::vector<spawn_target>> live_targets(const cluster_status& status,
                                                      const std::vector<std::string>& only);

/// How long a spawn waits at least, whatever timeout its caller gives: a node answers it from
/// its agent, which may wait behind other work on a busy node (a local cluster's nodes run one
/// scheduler thread). A job's request timeout (`--timeout-ms`) bounds its data path, not its
/// start; the targets are members the registry sees up.
inline constexpr std::chrono::milliseconds min_spawn_timeout{30000};

/// How long a spawn waits for its answer before it asks again.
inline constexpr std::chrono::milliseconds spawn_attempt_timeout{5000};

/// How long an unanswered spawn's error waits for the node's agent to answer a ping.
inline constexpr std::chrono::milliseconds spawn_ping_timeout{2000};

/// Spawns one actor of type `factory` with `args` on `target`, waiting up to the larger of
/// `timeout` and min_spawn_timeout. A request unanswered after `attempt` is sent again under
/// the same request id, so that a lost message costs one attempt and the node still spawns
/// once. Fails with errc::spawn_failed naming the node and the cause; when no attempt was
/// answered, the error also counts them and says whether the agent answers a ping
/// (unanswered_spawn). A target whose handle is a lost proxy (is_lost_proxy) fails at its
/// first unanswered attempt: nothing sent to it can be answered.
caf::expected<caf::actor> spawn_on(caf::actor_system& sys, const spawn_target& target,
                                   std::chrono::milliseconds timeout, const std::string& factory,
                                   caf::message args,
                                   std::chrono::milliseconds attempt = spawn_attempt_timeout);

/// Why `target` left a spawn unanswered, for its error: its handle is a lost proxy (this
/// process's connection to the node was lost), or whether its agent answers a ping within
/// `wait` (then the spawn request itself was lost or is stuck there) or not (the node is
/// stalled, or cut off from this process).
std::string unanswered_spawn(caf::actor_system& sys, const spawn_target& target,
                             std::chrono::milliseconds wait = spawn_ping_timeout);

/// Spawns `count` actors of type `factory`, the i-th with args(i) on targets[i % size]. On the
/// first failure, stops the ones already started and returns that failure.
/// Precondition: targets is not empty.
caf::expected<std::vector<caf::actor>> spawn_group(caf::actor_system& sys,
                                                   const std::vector<spawn_target>& targets,
                                                   std::chrono::milliseconds timeout,
                                                   const std::string& factory,
                                                   const std::function<caf::message(size_t)>& args,
                                                   size_t count);

/// spawn_group with typed handles.
template <class Handle>
caf::expected<std::vector<Handle>> spawn_group(caf::actor_system& sys,
                                               const std::vector<spawn_target>& targets,
                                               std::chrono::milliseconds timeout,
                                               const std::string& factory,
                                               const std::function<caf::message(size_t)>& args,
                                               size_t count) {
  auto actors = spawn_group(sys, targets, timeout, factory, args, count);
  if (!actors)
    return std::move(actors.error());
  std::vector<Handle> result;
  for (auto& a : *actors)
    result.push_back(caf::actor_cast<Handle>(a));
  return result;
}

} // namespace darcy::runtime
