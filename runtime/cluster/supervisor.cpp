#include "runtime/cluster/supervisor.hpp"

#include <algorithm>
#include <functional>

#include <caf/event_based_actor.hpp>

#include "messages/error.hpp"
#include "runtime/cluster/exit_cascade.hpp"
#include "runtime/metrics.hpp"
#include "runtime/system_config.hpp"

namespace darcy::runtime {

namespace {

using record = supervisor_state::child_record;
using continuation = std::function<void()>;

record* find(supervisor_pointer self, const std::string& id) {
  for (auto& child : self->state.children)
    if (child.spec.id == id)
      return &child;
  return nullptr;
}

void publish(supervisor_pointer self, supervisor_event_kind kind, const record& child,
             std::string reason = {}) {
  supervisor_event event{kind,       self->state.spec.name, child.spec.id,
                         child.node, child.actor,           std::move(reason)};
  for (auto& subscriber : self->state.subscribers)
    caf::anon_send(subscriber, event);
}

// Stops a running child without treating its exit as a crash.
void stop_child(supervisor_pointer self, record& child) {
  ++child.generation;
  if (!child.actor)
    return;
  self->demonitor(child.actor);
  self->send_exit(child.actor, caf::exit_reason::user_shutdown);
  child.actor = nullptr;
  self->state.running->erase(child.spec.id);
}

void give_up(supervisor_pointer self, const std::string& why) {
  auto& children = self->state.children;
  for (auto i = children.rbegin(); i != children.rend(); ++i)
    stop_child(self, *i);
  supervisor_event event{supervisor_event_kind::gave_up, self->state.spec.name, {}, {}, {}, why};
  for (auto& subscriber : self->state.subscribers)
    caf::anon_send(subscriber, event);
  self->quit(make_error(errc::restart_intensity_exceeded, self->state.spec.name + ": " + why));
}

// Records one restart; false when that exceeds the intensity within the period.
bool note_restart(supervisor_pointer self) {
  auto now = std::chrono::steady_clock::now();
  auto period = std::chrono::milliseconds{self->state.spec.period_ms};
  auto& times = self->state.restart_times;
  times.push_back(now);
  while (!times.empty() && now - times.front() > period)
    times.pop_front();
  return times.size() <= self->state.spec.intensity;
}

void schedule_retry(supervisor_pointer self, const std::string& id, const caf::error& why);

// The child is up: watch it, register its service, then tell subscribers. A child already gone
// again by then is not announced: subscribers never see a started child without its actor.
void on_started(supervisor_pointer self, const std::string& id, caf::actor actor, std::string node,
                bool restarted, continuation next) {
  auto child = find(self, id);
  child->actor = actor;
  child->node = std::move(node);
  self->monitor(actor);
  (*self->state.running)[id] = actor;
  auto kind =
    restarted ? supervisor_event_kind::child_restarted : supervisor_event_kind::child_started;
  auto registry = self->system().registry().get<registry_actor>(registry_key);
  if (child->spec.service.empty() || !registry) {
    publish(self, kind, *child);
    next();
    return;
  }
  service_info info{child->spec.service, child->node, actor};
  self->request(registry, std::chrono::seconds(10), register_atom::value, std::move(info))
    .then(
      [self, id, kind, actor, next](ok_atom) {
        if (auto child = find(self, id); child && child->actor == actor)
          publish(self, kind, *child);
        next();
      },
      [self, id, kind, actor, next](caf::error& err) {
        if (auto child = find(self, id); child && child->actor == actor)
          publish(self, kind, *child, "service not registered: " + render(err));
        next();
      });
}

// The first of `wanted` that `status` lists as up with an agent, skipping `avoid`; nullptr
// when there is none. "*" stands for any such member, the seed last.
const member_info* first_live(const cluster_status& status, const std::vector<std::string>& wanted,
                              const std::set<std::string>& avoid) {
  auto usable = [&](const member_info& m) {
    return m.state == member_state::up && m.agent && !avoid.contains(m.name);
  };
  for (auto& name : wanted) {
    if (name == any_node) {
      for (bool seed : {false, true})
        for (auto& m : status.members)
          if (usable(m) && (m.name == status.seed) == seed)
            return &m;
      continue;
    }
    for (auto& m : status.members)
      if (m.name == name && usable(m))
        return &m;
  }
  return nullptr;
}

// Spawns the child on the first live node of its spec (or locally), preferring nodes not
// known to be unreachable, then calls on_started.
void start_child(supervisor_pointer self, const std::string& id, bool restarted,
                 continuation next) {
  auto child = find(self, id);
  if (child == nullptr) {
    next();
    return;
  }
  auto generation = ++child->generation;
  auto fail = [self, id, next](const caf::error& err) {
    schedule_retry(self, id, err);
    next();
  };
  auto accept = [self, id, generation, restarted, next](caf::actor actor, std::string node) {
    auto child = find(self, id);
    if (child == nullptr || child->generation != generation) {
      self->send_exit(actor, caf::exit_reason::user_shutdown);
      next();
      return;
    }
    on_started(self, id, std::move(actor), std::move(node), restarted, next);
  };
  auto local = node_name(self->system());
  auto start_here = [self, local, accept, fail](const child_spec& spec) {
    auto actor = self->system().spawn<caf::actor>(spec.factory, spec.args, nullptr, false);
    if (!actor)
      return fail(make_error(errc::spawn_failed, spec.factory + ": " + render(actor.error())));
    accept(std::move(*actor), local);
  };
  auto& spec = child->spec;
  auto registry = self->system().registry().get<registry_actor>(registry_key);
  if (spec.nodes.empty() || (!registry && spec.nodes.front() == local))
    return start_here(spec);
  if (!registry)
    return fail(make_error(errc::no_live_node, "no registry to place '" + id + "'"));
  self->request(registry, std::chrono::seconds(10), status_atom::value)
    .then(
      [self, id, local, accept, fail, start_here](const cluster_status& status) {
        auto child = find(self, id);
        if (child == nullptr)
          return;
        auto target = first_live(status, child->spec.nodes, self->state.unreachable);
        if (target == nullptr)
          target = first_live(status, child->spec.nodes, {});
        if (target == nullptr)
          return fail(make_error(errc::no_live_node, "for child '" + id + "'"));
        auto& spec = child->spec;
        if (target->name == local)
          return start_here(spec);
        auto agent = caf::actor_cast<node_agent_actor>(target->agent);
        self->request(agent, std::chrono::seconds(10), spawn_atom::value, spec.factory, spec.args)
          .then(
            [accept, node = target->name](caf::actor& actor) { accept(std::move(actor), node); },
            [fail](caf::error& err) { fail(err); });
      },
      [fail](caf::error& err) { fail(err); });
}

void start_all(supervisor_pointer self, std::vector<std::string> ids, size_t index,
               bool restarted) {
  if (index >= ids.size())
    return;
  auto id = ids[index];
  start_child(self, id, restarted, [self, ids = std::move(ids), index, restarted]() mutable {
    start_all(self, std::move(ids), index + 1, restarted);
  });
}

void schedule_retry(supervisor_pointer self, const std::string& id, const caf::error& why) {
  auto child = find(self, id);
  if (child == nullptr)
    return;
  publish(self, supervisor_event_kind::child_exited, *child, "start failed: " + render(why));
  if (!note_restart(self))
    return give_up(self, "could not start '" + id + "': " + render(why));
  self->delayed_send(self, std::chrono::milliseconds(100), retry_atom::value, id);
}

// The children to restart together with `failed` under the supervisor's strategy, in order.
std::vector<std::string> restart_group(supervisor_pointer self, const std::string& failed) {
  std::vector<std::string> group;
  auto strategy = self->state.spec.strategy;
  bool after = false;
  for (auto& child : self->state.children) {
    bool is_failed = child.spec.id == failed;
    after = after || is_failed;
    if (is_failed || strategy == restart_strategy::one_for_all ||
        (strategy == restart_strategy::rest_for_one && after))
      group.push_back(child.spec.id);
  }
  return group;
}

void on_child_down(supervisor_pointer self, record& child, const caf::error& reason) {
  auto id = child.spec.id;
  child.actor = nullptr;
  self->state.running->erase(id);
  bool abnormal = reason && reason != caf::exit_reason::normal;
  publish(self, supervisor_event_kind::child_exited, child, render(reason));
  auto restart = child.spec.restart;
  if (restart == restart_type::temporary) {
    auto& children = self->state.children;
    children.erase(std::remove_if(children.begin(), children.end(),
                                  [&](const record& r) { return r.spec.id == id; }),
                   children.end());
    return;
  }
  if (restart == restart_type::transient && !abnormal)
    return;
  if (!note_restart(self))
    return give_up(self, "child '" + id + "' exited: " + render(reason));
  auto group = restart_group(self, id);
  // Stop the others in reverse start order; temporary ones leave for good.
  for (auto i = group.rbegin(); i != group.rend(); ++i)
    if (auto other = find(self, *i); other != nullptr && *i != id)
      stop_child(self, *other);
  auto& children = self->state.children;
  std::vector<std::string> restart_ids;
  for (auto& member : group) {
    auto r = find(self, member);
    if (r == nullptr)
      continue;
    if (member != id && r->spec.restart == restart_type::temporary) {
      children.erase(std::remove_if(children.begin(), children.end(),
                                    [&](const record& x) { return x.spec.id == member; }),
                     children.end());
      continue;
    }
    ++r->restarts;
    process_metrics()
      .counter("darcy_restarts_total", "Children restarted by the supervisors of this node",
               {{"supervisor", self->state.spec.name}, {"child", member}})
      ->add();
    restart_ids.push_back(member);
  }
  start_all(self, std::move(restart_ids), 0, true);
}

// A member declared down (a stopped or partitioned process) keeps its connection, so no
// down_msg comes: its children are given up now, and told to exit should it resume.
void on_member_gone(supervisor_pointer self, const cluster_event& event) {
  if (event.kind == cluster_event_kind::member_up)
    self->state.unreachable.erase(event.node);
  if (event.kind != cluster_event_kind::member_down &&
      event.kind != cluster_event_kind::member_left)
    return;
  self->state.unreachable.insert(event.node);
  if (event.node == node_name(self->system()))
    return;
  for (auto& child : self->state.children) {
    if (!child.actor || child.node != event.node)
      continue;
    auto lost = child.actor;
    self->demonitor(lost);
    self->send_exit(lost, caf::exit_reason::kill);
    on_child_down(
      self, child,
      make_error(errc::node_unreachable,
                 "node " + event.node + " " + to_string(event.kind) + ": " + event.reason));
    // on_child_down may have restarted the whole group: look the next child up afresh.
    return on_member_gone(self, event);
  }
}

} // namespace

supervisor_actor::behavior_type supervisor(supervisor_pointer self, supervisor_spec spec) {
  auto& state = self->state;
  state.spec = std::move(spec);
  state.running = std::make_shared<std::map<std::string, caf::actor>>();
  stop_on_exit(*self, [running = state.running] {
    std::vector<caf::actor> children;
    for (auto& [id, actor] : *running)
      children.push_back(actor);
    return children;
  });
  std::vector<std::string> ids;
  caf::error invalid;
  for (auto& child_spec : state.spec.children) {
    if (find(self, child_spec.id) != nullptr)
      invalid = make_error(errc::invalid_argument, "duplicate child id '" + child_spec.id + "'");
    state.children.push_back({child_spec, {}, {}, 0, 0});
    ids.push_back(child_spec.id);
  }
  self->set_down_handler([self](caf::down_msg& msg) {
    for (auto& child : self->state.children)
      if (child.actor && child.actor.address() == msg.source) {
        if (msg.reason == caf::exit_reason::remote_link_unreachable)
          self->state.unreachable.insert(child.node);
        return on_child_down(self, child, msg.reason);
      }
    auto& subs = self->state.subscribers;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [&](const caf::actor& a) { return a.address() == msg.source; }),
               subs.end());
  });
  if (invalid) {
    self->quit(std::move(invalid));
  } else {
    if (auto registry = self->system().registry().get<registry_actor>(registry_key))
      self->send(registry, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
    start_all(self, std::move(ids), 0, false);
  }
  return {
    [self](const cluster_event& event) { on_member_gone(self, event); },
    [self](children_atom) {
      std::vector<child_info> result;
      for (auto& child : self->state.children)
        result.push_back({child.spec.id, child.node, child.actor, child.restarts});
      return result;
    },
    [self](subscribe_atom, caf::actor subscriber) {
      if (!subscriber)
        return;
      self->monitor(subscriber);
      // Replay the running children so that a late subscriber misses nothing.
      for (auto& child : self->state.children)
        if (child.actor)
          caf::anon_send(subscriber, supervisor_event{supervisor_event_kind::child_started,
                                                      self->state.spec.name,
                                                      child.spec.id,
                                                      child.node,
                                                      child.actor,
                                                      {}});
      self->state.subscribers.push_back(std::move(subscriber));
    },
    [self](retry_atom, const std::string& id) {
      if (auto child = find(self, id); child != nullptr && !child->actor)
        start_child(self, id, true, [] {});
    },
  };
}

} // namespace darcy::runtime
