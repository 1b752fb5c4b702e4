#include "runtime/node_agent.hpp"

#include <algorithm>
#include <csignal>
#include <unistd.h>

#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>

#include "messages/error.hpp"
#include "runtime/log.hpp"
#include "runtime/membership.hpp"
#include "runtime/probe.hpp"

namespace darcy::runtime {

namespace {

// Connects to the probe's target node through the middleman, then runs the probe there.
caf::result<probe_result> start_probe(node_agent_pointer self, probe_spec spec) {
  auto promise = self->make_response_promise<probe_result>();
  auto mm = self->system().middleman().actor_handle();
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
  return promise;
}

} // namespace

node_agent_actor::behavior_type node_agent(node_agent_pointer self, node_agent_options options) {
  self->state.options = std::move(options);
  self->state.spawned = std::make_shared<std::vector<caf::actor>>();
  self->attach_functor([spawned = self->state.spawned](const caf::error&) {
    for (auto& child : *spawned)
      caf::anon_send_exit(child, caf::exit_reason::user_shutdown);
  });
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
    [self](join_atom, member_info& info) { return join_registry(self, std::move(info)); },
    [](echo_atom, std::string& payload) { return std::move(payload); },
    [self](registry_atom) -> caf::result<registry_actor> {
      if (!self->state.options.registry)
        return make_error(errc::not_found, "this node has no registry");
      return self->state.options.registry;
    },
    [self](spawn_atom, const std::string& type, caf::message& args) -> caf::result<caf::actor> {
      auto child = self->system().spawn<caf::actor>(type, std::move(args), nullptr, false);
      if (!child)
        return make_error(errc::spawn_failed, "'" + type + "' on node " +
                                                self->state.options.name + ": " +
                                                render(child.error()));
      self->monitor(*child);
      self->state.spawned->push_back(*child);
      return *child;
    },
    [self](probe_atom, probe_spec& spec) { return start_probe(self, std::move(spec)); },
    [](kill_node_atom) { ::kill(::getpid(), SIGKILL); },
    [self](tick_atom) { membership_tick(self); },
  };
}

} // namespace darcy::runtime
