#include "runtime/cluster/spawn_on.hpp"

#include <algorithm>
#include <atomic>
#include <random>

#include <caf/send.hpp>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/direct_connections.hpp"

namespace darcy::runtime {

std::vector<std::string> preferred_nodes(const std::vector<std::string>& nodes, size_t i) {
  std::vector<std::string> out;
  for (size_t k = 0; k < nodes.size(); ++k) {
    auto& node = nodes[(i + k) % nodes.size()];
    if (std::find(out.begin(), out.end(), node) == out.end())
      out.push_back(node);
  }
  return out;
}

caf::expected<std::vector<spawn_target>> live_targets(const cluster_status& status,
                                                      const std::vector<std::string>& only) {
  std::vector<spawn_target> result;
  for (auto& m : status.members) {
    bool wanted = only.empty() || std::find(only.begin(), only.end(), m.name) != only.end();
    if (wanted && m.state == member_state::up && m.agent)
      result.push_back({m.name, caf::actor_cast<node_agent_actor>(m.agent)});
  }
  if (result.empty())
    return make_error(errc::no_live_node, only.empty() ? "the cluster has no member that is up"
                                                       : "none of the named nodes is up");
  return result;
}

caf::expected<caf::actor> spawn_on(caf::actor_system& sys, const spawn_target& target,
                                   std::chrono::milliseconds timeout, const std::string& factory,
                                   caf::message args, std::chrono::milliseconds attempt) {
  using std::chrono::steady_clock;
  static std::atomic<uint64_t> next{std::random_device{}() | 1};
  auto request = next.fetch_add(2); // odd: never 0
  auto start = steady_clock::now();
  auto deadline = start + std::max(timeout, min_spawn_timeout);
  auto where = factory + " on node " + target.node + ": ";
  for (int attempts = 1;; ++attempts) {
    auto actor = ask<caf::actor>(sys, target.agent, attempt_wait(attempt, deadline),
                                 spawn_atom::value, factory, args, request);
    if (actor)
      return actor;
    if (actor.error() != caf::sec::request_timeout)
      return make_error(errc::spawn_failed, where + render(actor.error()));
    if (steady_clock::now() >= deadline ||
        is_lost_proxy(caf::actor_cast<caf::actor>(target.agent))) {
      auto waited = std::chrono::duration_cast<std::chrono::seconds>(steady_clock::now() - start);
      return make_error(errc::spawn_failed, where + "no answer to " + std::to_string(attempts) +
                                              " attempts over " + std::to_string(waited.count()) +
                                              " s; " + unanswered_spawn(sys, target));
    }
  }
}

std::string unanswered_spawn(caf::actor_system& sys, const spawn_target& target,
                             std::chrono::milliseconds wait) {
  if (is_lost_proxy(caf::actor_cast<caf::actor>(target.agent)))
    return "this process's handle to its agent is dead: its connection to the node was lost";
  if (ask<std::string>(sys, target.agent, wait, ping_atom::value))
    return "its agent answers a ping, so the spawn request was lost or is stuck there";
  return "its agent does not answer a ping within " + std::to_string(wait.count()) +
         " ms either: the node is stalled, or cut off from this process";
}

caf::expected<std::vector<caf::actor>> spawn_group(caf::actor_system& sys,
                                                   const std::vector<spawn_target>& targets,
                                                   std::chrono::milliseconds timeout,
                                                   const std::string& factory,
                                                   const std::function<caf::message(size_t)>& args,
                                                   size_t count) {
  std::vector<caf::actor> started;
  for (size_t i = 0; i < count; ++i) {
    auto actor = spawn_on(sys, targets[i % targets.size()], timeout, factory, args(i));
    if (!actor) {
      for (auto& a : started)
        caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
      return std::move(actor.error());
    }
    started.push_back(std::move(*actor));
  }
  return started;
}

} // namespace darcy::runtime
