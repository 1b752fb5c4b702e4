#include "ops/supervised_shards.hpp"

#include <map>

#include <caf/scoped_actor.hpp>

#include "actors/embedding/embedding_shard.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"

namespace darcy::ops {

caf::expected<supervised_shards> start_supervised_shards(
  session& s, const std::vector<runtime::spawn_target>& targets, const std::string& prefix) {
  supervised_shards result;
  supervisor_spec spec;
  spec.name = prefix + ".shards";
  spec.strategy = restart_strategy::one_for_one;
  // Every shard may be lost a few times over a long run.
  spec.intensity = static_cast<uint32_t>(4 * targets.size() + 4);
  spec.period_ms = 60000;
  for (size_t i = 0; i < targets.size(); ++i) {
    child_spec child;
    child.id = "shard." + std::to_string(i);
    child.factory = actors::embedding_shard_state::name;
    child.args = caf::make_message(static_cast<uint32_t>(i));
    for (size_t k = 0; k < targets.size(); ++k) {
      auto& node = targets[(i + k) % targets.size()].node;
      if (std::find(child.nodes.begin(), child.nodes.end(), node) == child.nodes.end())
        child.nodes.push_back(node);
    }
    child.service = prefix + ".shard." + std::to_string(i);
    result.services.push_back(child.service);
    spec.children.push_back(std::move(child));
  }
  caf::scoped_actor self{s.system()};
  result.supervisor = s.supervise(spec);
  self->send(result.supervisor, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
  std::map<std::string, caf::actor> started;
  caf::error failure;
  while (started.size() < targets.size() && !failure) {
    self->receive(
      [&](const supervisor_event& e) {
        if (e.kind == supervisor_event_kind::gave_up)
          failure = make_error(errc::spawn_failed, "embedding shards: " + e.reason);
        else if (e.kind == supervisor_event_kind::child_started ||
                 e.kind == supervisor_event_kind::child_restarted)
          started[e.child] = e.actor;
      },
      caf::after(s.timeout() * 4) >> [&] {
        failure = make_error(errc::timeout, "embedding shards did not all start");
      });
  }
  if (failure) {
    self->send_exit(result.supervisor, caf::exit_reason::user_shutdown);
    return failure;
  }
  for (size_t i = 0; i < targets.size(); ++i)
    result.shards.push_back(
      caf::actor_cast<embedding_shard_actor>(started["shard." + std::to_string(i)]));
  return result;
}

} // namespace darcy::ops
