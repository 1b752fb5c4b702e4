#include "ops/supervised_group.hpp"

#include <algorithm>
#include <map>

#include <caf/scoped_actor.hpp>

#include "messages/error.hpp"
#include "ops/session.hpp"

namespace darcy::ops {

std::string group_child_id(const std::string& kind, size_t i) {
  return kind + "." + std::to_string(i);
}

caf::expected<supervised_group> start_supervised_group(
  session& s, const std::vector<runtime::spawn_target>& targets, const group_spec& spec) {
  if (targets.empty())
    return make_error(errc::invalid_argument, spec.prefix + "." + spec.kind + "s: no nodes");
  supervised_group result;
  supervisor_spec sup;
  sup.name = spec.prefix + "." + spec.kind + "s";
  sup.strategy = restart_strategy::one_for_one;
  // Every child may be lost a few times over a long run.
  sup.intensity = static_cast<uint32_t>(4 * spec.count + 4);
  sup.period_ms = 60000;
  std::vector<std::string> names;
  for (auto& t : targets)
    names.push_back(t.node);
  for (size_t i = 0; i < spec.count; ++i) {
    child_spec child;
    child.id = group_child_id(spec.kind, i);
    child.factory = spec.factory;
    child.args = spec.args(i);
    child.nodes = runtime::preferred_nodes(names, i);
    // Once every node of the group is lost, any live member: a replacement that joined since.
    child.nodes.push_back(any_node);
    child.service = spec.prefix + "." + child.id;
    result.services.push_back(child.service);
    sup.children.push_back(std::move(child));
  }
  caf::scoped_actor self{s.system()};
  result.supervisor = s.supervise(sup);
  // The supervisor may give up before it reads the subscription (its children start as soon as
  // it is spawned): its exit then says why.
  self->monitor(result.supervisor);
  self->send(result.supervisor, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
  std::map<std::string, caf::actor> started;
  // Why a child last exited: a group that never starts says so when it times out.
  std::string last_exit;
  caf::error failure;
  while (started.size() < spec.count && !failure) {
    self->receive(
      [&](const supervisor_event& e) {
        if (e.kind == supervisor_event_kind::gave_up)
          failure = make_error(errc::spawn_failed, sup.name + ": " + e.reason);
        else if (e.kind == supervisor_event_kind::child_exited)
          last_exit = e.child + " exited: " + e.reason;
        else
          started[e.child] = e.actor;
      },
      [&](const caf::down_msg& down) {
        failure = make_error(errc::spawn_failed, render(down.reason));
      },
      caf::after(s.timeout() * 4) >>
        [&] {
          failure = make_error(errc::timeout, sup.name + " did not all start" +
                                                (last_exit.empty() ? "" : "; " + last_exit));
        });
  }
  self->demonitor(result.supervisor.address());
  if (failure) {
    self->send_exit(result.supervisor, caf::exit_reason::user_shutdown);
    return failure;
  }
  for (size_t i = 0; i < spec.count; ++i)
    result.actors.push_back(started[group_child_id(spec.kind, i)]);
  return result;
}

} // namespace darcy::ops
