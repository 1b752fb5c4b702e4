#include "runtime/cluster/membership.hpp"

#include <algorithm>

#include <caf/io/middleman.hpp>

#include "messages/error.hpp"
#include "runtime/log.hpp"
#include "runtime/tls.hpp"

namespace darcy::runtime {

namespace {

constexpr std::chrono::milliseconds max_backoff{5000};

std::chrono::milliseconds request_timeout(node_agent_pointer self) {
  return std::max(self->state.options.heartbeat_interval * 4, std::chrono::milliseconds{1000});
}

uint64_t incarnation_in(const cluster_status& status, const std::string& name) {
  for (auto& m : status.members)
    if (m.name == name)
      return m.incarnation;
  return 0;
}

// The cluster gave this node up and replaced what ran on it: its actors must not act again.
void fence(node_agent_pointer self, uint64_t incarnation) {
  auto& st = self->state;
  log_warn(
    "darcy node {}: declared down and re-admitted as incarnation {} (was {}); stopping "
    "the {} actors of the old incarnation",
    st.options.name, incarnation, st.incarnation, st.spawned->size());
  auto reason =
    make_error(errc::node_unreachable, "fenced: node " + st.options.name + " was declared down");
  for (auto& child : *st.spawned)
    self->send_exit(child, reason);
  st.spawned->clear();
}

void adopt(node_agent_pointer self, registry_actor registry, const cluster_status& status) {
  auto& st = self->state;
  if (registry != st.options.registry) {
    st.options.registry = std::move(registry);
    self->monitor(st.options.registry);
    self->system().registry().put(registry_key,
                                  caf::actor_cast<caf::strong_actor_ptr>(st.options.registry));
  }
  st.incarnation = incarnation_in(status, st.options.name);
  st.registry_lost = false;
  st.backoff = std::chrono::milliseconds{0};
}

void schedule(node_agent_pointer self) {
  auto& st = self->state;
  auto delay = st.registry_lost ? std::max(st.backoff, st.options.heartbeat_interval)
                                : st.options.heartbeat_interval;
  self->delayed_send(self, delay, tick_atom::value);
}

void rejoin_failed(node_agent_pointer self, const caf::error& err) {
  auto& st = self->state;
  st.rejoining = false;
  st.backoff = std::min(max_backoff, std::max(st.backoff * 2, st.options.heartbeat_interval));
  log_debug("darcy node {}: seed not reachable yet ({}); next try in {} ms", st.options.name,
            render(err), st.backoff.count());
}

/// Joins `registry` again. `given_up`: it had forgotten this node (declared it down, then
/// pruned it), so what the node ran was replaced: its actors are fenced as on a re-admission.
void join_through(node_agent_pointer self, registry_actor registry, bool given_up) {
  auto& st = self->state;
  self->request(registry, request_timeout(self), join_atom::value, *st.self)
    .then(
      [self, registry, given_up](const cluster_status& status) {
        auto& st = self->state;
        st.rejoining = false;
        auto now = incarnation_in(status, st.options.name);
        if (given_up && st.incarnation != 0 && now != st.incarnation)
          fence(self, now);
        adopt(self, registry, status);
        log_info("darcy node {}: joined the seed again as incarnation {}", self->state.options.name,
                 self->state.incarnation);
      },
      [self](caf::error& err) {
        if (is(err, errc::duplicate_node))
          log_error("darcy node {}: cannot rejoin: another live node took the name",
                    self->state.options.name);
        rejoin_failed(self, err);
      });
}

// Presents the cluster's credential to a (restarted) seed's registry, then joins it.
void greet(node_agent_pointer self, registry_actor registry) {
  self->request(registry, request_timeout(self), hello_atom::value, self->state.options.credential)
    .then([self, registry](ok_atom) { join_through(self, registry, false); },
          [self](caf::error& err) { rejoin_failed(self, err); });
}

// Connects to the seed's address again and joins its (new) registry.
void seek_seed(node_agent_pointer self) {
  auto& st = self->state;
  if (!st.options.seed || st.rejoining)
    return;
  st.rejoining = true;
  auto mm = connection_manager(self->system());
  self
    ->request(mm, request_timeout(self), caf::connect_atom::value, st.options.seed->host,
              st.options.seed->port)
    .then(
      [self](const caf::node_id&, caf::strong_actor_ptr& target, const std::set<std::string>&) {
        if (!target)
          return rejoin_failed(self, make_error(errc::node_unreachable, "no agent"));
        auto agent = caf::actor_cast<node_agent_actor>(std::move(target));
        self->request(agent, request_timeout(self), registry_atom::value)
          .then([self](registry_actor& registry) { greet(self, std::move(registry)); },
                [self](caf::error& err) { rejoin_failed(self, err); });
      },
      [self](caf::error& err) { rejoin_failed(self, err); });
}

void heartbeat(node_agent_pointer self) {
  auto& st = self->state;
  self
    ->request(st.options.registry, request_timeout(self), heartbeat_atom::value, st.options.name,
              st.incarnation)
    .then(
      [self](uint64_t incarnation) {
        auto& st = self->state;
        if (st.incarnation != 0 && incarnation != st.incarnation)
          fence(self, incarnation);
        st.incarnation = incarnation;
      },
      [self](caf::error& err) {
        auto& st = self->state;
        if (!is(err, errc::unknown_node) || st.rejoining)
          return;
        // The registry forgot this node (pruned it): join it again.
        st.rejoining = true;
        join_through(self, st.options.registry, true);
      });
}

} // namespace

caf::result<cluster_status> join_registry(node_agent_pointer self, member_info info) {
  auto& st = self->state;
  if (!st.options.registry)
    return make_error(errc::not_found, "this node has no registry");
  st.self = info;
  auto promise = self->make_response_promise<cluster_status>();
  self->request(st.options.registry, request_timeout(self), join_atom::value, std::move(info))
    .then(
      [self, promise](cluster_status& status) mutable {
        adopt(self, self->state.options.registry, status);
        promise.deliver(std::move(status));
      },
      [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
  return promise;
}

void membership_tick(node_agent_pointer self) {
  auto& st = self->state;
  if (st.self) {
    if (st.registry_lost)
      seek_seed(self);
    else
      heartbeat(self);
  }
  schedule(self);
}

void on_registry_lost(node_agent_pointer self, const caf::error& reason) {
  auto& st = self->state;
  log_warn("darcy node {}: lost the seed's registry ({}){}", st.options.name, render(reason),
           st.options.seed ? "; rejoining when it is back" : "");
  st.registry_lost = true;
}

} // namespace darcy::runtime
