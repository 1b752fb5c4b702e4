#include "runtime/cluster/node_agent.hpp"

#include <unistd.h>
#include <algorithm>
#include <csignal>

#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>

#include "messages/error.hpp"
#include "runtime/cluster/chaos.hpp"
#include "runtime/cluster/exit_cascade.hpp"
#include "runtime/cluster/membership.hpp"
#include "runtime/cluster/probe.hpp"
#include "runtime/log.hpp"
#include "runtime/tls.hpp"

namespace darcy::runtime {

namespace {

// Connects to the probe's target node through the middleman, then runs the probe there.
void start_probe(node_agent_pointer self, probe_spec spec,
                 caf::typed_response_promise<probe_result> promise) {
  auto mm = connection_manager(self->system());
  self->request(mm, std::chrono::seconds(10), caf::connect_atom::value, spec.host, spec.port)
    .then(
      [self, spec, promise](const caf::node_id&, caf::strong_actor_ptr& target,
                            const std::set<std::string>&) mutable {
        if (!target) {
          promise.deliver(make_error(errc::node_unreachable, spec.host));
          return;
        }
        auto& state = self->state;
        if (!state.probe) {
          state.probe = self->spawn(probe_driver);
          state.spawned->push_back(caf::actor_cast<caf::actor>(state.probe));
        }
        promise.delegate(state.probe, probe_atom::value,
                         caf::actor_cast<caf::actor>(std::move(target)), spec);
      },
      [promise](caf::error& err) mutable {
        promise.deliver(make_error(errc::node_unreachable, render(err)));
      });
}

// Runs `action` when the sender may manage this node, else `refuse` with the error. With a
// cluster secret, a process other than this one must have presented it to the registry.
template <class Action, class Refuse>
void when_trusted(node_agent_pointer self, const char* what, Action action, Refuse refuse) {
  auto& st = self->state;
  auto sender = self->current_sender();
  if (st.options.credential.empty() ||
      (sender != nullptr && (sender->node() == self->node() || st.trusted.count(sender->node()))))
    return action();
  auto denied = [self, what, refuse](const std::string& who) mutable {
    log_warn("darcy node {}: refused {} from {}: wrong or missing cluster secret",
             self->state.options.name, what, who);
    refuse(make_error(errc::permission_denied, std::string{what} + " on node " +
                                                 self->state.options.name +
                                                 ": this cluster needs its secret"));
  };
  if (sender == nullptr || !st.options.registry)
    return denied("an anonymous sender");
  auto node = sender->node();
  self->request(st.options.registry, std::chrono::seconds(10), trusted_atom::value, node)
    .then(
      [self, node, action, denied](bool trusted) mutable {
        if (!trusted)
          return denied("process " + to_string(node));
        self->state.trusted.insert(node);
        action();
      },
      [node, denied](caf::error&) mutable { denied("process " + to_string(node)); });
}

caf::expected<caf::actor> spawn_child(node_agent_pointer self, const std::string& type,
                                      caf::message args) {
  auto child = self->system().spawn<caf::actor>(type, std::move(args), nullptr, false);
  if (!child)
    return make_error(errc::spawn_failed, "'" + type + "' on node " + self->state.options.name +
                                            ": " + render(child.error()));
  if (!self->state.options.chaos_gates) {
    self->monitor(*child);
    self->state.spawned->push_back(*child);
    return *child;
  }
  // Peers hold the gate, so that chaos commands reach traffic already flowing.
  auto plan = self->state.node_plan;
  plan.seed += self->state.gates_spawned++;
  auto gate = self->system().spawn(chaos_gate, *child, plan);
  remember_gate(*child, gate);
  self->monitor(gate);
  self->state.spawned->push_back(gate);
  return gate;
}

/// How many spawn request ids an agent remembers.
constexpr size_t remembered_spawns = 1024;

void deliver(caf::typed_response_promise<caf::actor>& promise, const caf::expected<caf::actor>& r) {
  if (r)
    promise.deliver(*r);
  else
    promise.deliver(r.error());
}

/// Spawns `type` with `args` once the sender is trusted; `done` gets the handle or the error.
template <class Done>
void spawn_when_trusted(node_agent_pointer self, const std::string& type, caf::message args,
                        Done done) {
  when_trusted(
    self, "spawn", [self, type, args, done]() mutable { done(spawn_child(self, type, args)); },
    [done](caf::error err) mutable { done(caf::expected<caf::actor>{std::move(err)}); });
}

/// A node-wide chaos command: sets the plan of gates spawned from now on, passes `cmd` to every
/// live gate and delivers their summed counts.
void command_every_gate(node_agent_pointer self, const chaos_command& cmd,
                        caf::response_promise promise) {
  if (cmd.op == chaos_op::disrupt)
    self->state.node_plan = cmd.plan;
  else if (cmd.op == chaos_op::heal)
    self->state.node_plan = disruption{};
  auto gates = *self->state.spawned;
  if (gates.empty()) {
    promise.deliver(chaos_stats{});
    return;
  }
  struct gathering {
    chaos_stats total;
    size_t open = 0;
  };
  auto g = std::make_shared<gathering>();
  g->open = gates.size();
  auto one_done = [g, promise]() mutable {
    if (--g->open == 0)
      promise.deliver(g->total);
  };
  for (size_t i = 0; i < gates.size(); ++i) {
    auto each = cmd;
    each.plan.seed += i; // gates draw different drops from one seed
    self->request(gates[i], std::chrono::seconds(10), each)
      .then(
        [g, one_done](chaos_stats& s) mutable {
          g->total.forwarded += s.forwarded;
          g->total.dropped += s.dropped;
          g->total.delayed += s.delayed;
          one_done();
        },
        [one_done](caf::error&) mutable { one_done(); });
  }
}

} // namespace

node_agent_actor::behavior_type node_agent(node_agent_pointer self, node_agent_options options) {
  self->state.options = std::move(options);
  self->state.spawned = std::make_shared<std::vector<caf::actor>>();
  stop_on_exit(*self, [spawned = self->state.spawned] { return *spawned; });
  auto& opts = self->state.options;
  if (opts.registry && opts.heartbeat_interval.count() > 0) {
    self->monitor(opts.registry);
    self->send(self, tick_atom::value);
  }
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& spawned = *self->state.spawned;
    spawned.erase(std::remove_if(spawned.begin(), spawned.end(),
                                 [&](const caf::actor& a) { return a.address() == msg.source; }),
                  spawned.end());
    if (msg.source == self->state.options.registry.address())
      on_registry_lost(self, msg.reason);
  });
  return {
    [self](ping_atom) { return self->state.options.name; },
    [self](join_atom, member_info& info) -> caf::result<cluster_status> {
      // Only this node's own process asks its agent to join.
      auto sender = self->current_sender();
      if (sender == nullptr || sender->node() != self->node())
        return make_error(errc::permission_denied, "join is asked by the node itself");
      return join_registry(self, std::move(info));
    },
    [](echo_atom, std::string& payload) { return std::move(payload); },
    [self](registry_atom) -> caf::result<registry_actor> {
      if (!self->state.options.registry)
        return make_error(errc::not_found, "this node has no registry");
      return self->state.options.registry;
    },
    [self](spawn_atom, const std::string& type, caf::message& args) {
      auto promise = self->make_response_promise<caf::actor>();
      spawn_when_trusted(
        self, type, std::move(args),
        [promise](const caf::expected<caf::actor>& r) mutable { deliver(promise, r); });
      return promise;
    },
    [self](spawn_atom, const std::string& type, caf::message& args, uint64_t request) {
      auto promise = self->make_response_promise<caf::actor>();
      auto& st = self->state;
      auto sender = self->current_sender();
      node_agent_state::spawn_key key{sender ? sender->node() : caf::node_id{}, request};
      auto [it, fresh] = st.spawns.try_emplace(key);
      if (!fresh) { // a retry, or a late copy
        if (it->second.answer)
          deliver(promise, *it->second.answer);
        else
          it->second.waiting.push_back(promise);
        return promise;
      }
      it->second.waiting.push_back(promise);
      st.spawn_order.push_back(key);
      while (st.spawn_order.size() > remembered_spawns &&
             st.spawns[st.spawn_order.front()].answer) {
        st.spawns.erase(st.spawn_order.front());
        st.spawn_order.pop_front();
      }
      spawn_when_trusted(self, type, std::move(args),
                         [self, key](const caf::expected<caf::actor>& r) {
                           auto i = self->state.spawns.find(key);
                           if (i == self->state.spawns.end())
                             return;
                           i->second.answer = r;
                           for (auto& p : i->second.waiting)
                             deliver(p, r);
                           i->second.waiting.clear();
                         });
      return promise;
    },
    [self](probe_atom, probe_spec& spec) {
      auto promise = self->make_response_promise<probe_result>();
      when_trusted(
        self, "probe", [self, spec, promise]() mutable { start_probe(self, spec, promise); },
        [promise](caf::error err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
    [self](const chaos_command& cmd, const caf::actor& gate) {
      auto promise = self->make_response_promise<chaos_stats>();
      when_trusted(
        self, "chaos",
        [self, cmd, gate, promise]() mutable {
          auto& spawned = *self->state.spawned;
          if (!self->state.options.chaos_gates)
            promise.deliver(make_error(
              errc::not_found, "node " + self->state.options.name +
                                 " runs without chaos gates: start it with `darcy node "
                                 "--chaos` (or [node] chaos = true) to disrupt its actors"));
          else if (!gate)
            command_every_gate(self, cmd, promise);
          else if (std::find(spawned.begin(), spawned.end(), gate) == spawned.end())
            promise.deliver(
              make_error(errc::not_found, "node " + self->state.options.name +
                                            " did not spawn that actor, so it has no chaos gate"));
          else // asked, not delegated: the gate takes commands from this node only
            self->request(gate, std::chrono::seconds(10), cmd)
              .then([promise](chaos_stats& stats) mutable { promise.deliver(stats); },
                    [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
        },
        [promise](caf::error err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
    [self](kill_node_atom) {
      when_trusted(
        self, "kill-node", [] { ::kill(::getpid(), SIGKILL); }, [](caf::error) {});
    },
    [self](tick_atom) { membership_tick(self); },
  };
}

} // namespace darcy::runtime
