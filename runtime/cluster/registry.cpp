#include "runtime/cluster/registry.hpp"

#include <algorithm>

#include "messages/error.hpp"
#include "runtime/cluster/cluster_secret.hpp"
#include "runtime/log.hpp"
#include "runtime/system_config.hpp"

namespace darcy::runtime {

namespace {

void publish(registry_pointer self, cluster_event event) {
  for (auto& subscriber : self->state.subscribers)
    caf::anon_send(subscriber, event);
}

void drop_service(registry_pointer self, std::map<std::string, service_info>::iterator i,
                  const std::string& reason) {
  publish(self,
          {cluster_event_kind::service_down, i->second.node, i->first, i->second.actor, reason});
  self->state.services.erase(i);
}

// Marks `name` down (or left) and removes the services it hosted.
void retire_member(registry_pointer self, const std::string& name, member_state state,
                   const std::string& reason) {
  auto i = self->state.members.find(name);
  if (i == self->state.members.end() || i->second.info.state != member_state::up)
    return;
  auto& info = i->second.info;
  info.state = state;
  info.reason = reason;
  i->second.retired = std::chrono::steady_clock::now();
  self->demonitor(info.agent);
  auto& services = self->state.services;
  for (auto s = services.begin(); s != services.end();) {
    auto next = std::next(s);
    if (s->second.node == name)
      drop_service(self, s, "node " + name + " " + to_string(state));
    s = next;
  }
  auto kind =
    state == member_state::left ? cluster_event_kind::member_left : cluster_event_kind::member_down;
  publish(self, {kind, name, {}, info.agent, reason, info.incarnation});
}

// Strictly increasing, and above any incarnation a previous registry (a seed that was
// restarted) can have handed out before now.
uint64_t next_incarnation(registry_pointer self) {
  auto& last = self->state.last_incarnation;
  last = std::max(last + 1, static_cast<uint64_t>(unix_ms()));
  return last;
}

// Makes `record` an up member under a new incarnation and tells subscribers.
void admit(registry_pointer self, registry_state::member_record& record, std::string reason) {
  auto& info = record.info;
  info.state = member_state::up;
  info.reason.clear();
  info.incarnation = next_incarnation(self);
  record.last_seen = std::chrono::steady_clock::now();
  self->monitor(info.agent);
  publish(self, {cluster_event_kind::member_up,
                 info.name,
                 {},
                 info.agent,
                 std::move(reason),
                 info.incarnation});
}

caf::result<uint64_t> heartbeat(registry_pointer self, const std::string& name,
                                uint64_t incarnation) {
  auto i = self->state.members.find(name);
  if (i == self->state.members.end() || i->second.info.state == member_state::left)
    return make_error(errc::unknown_node, name + " is not a member; join again");
  auto& record = i->second;
  if (record.info.state == member_state::down)
    admit(self, record, "heard from again after: " + record.info.reason);
  else if (incarnation == record.info.incarnation)
    record.last_seen = std::chrono::steady_clock::now();
  return record.info.incarnation;
}

bool is_trusted(registry_pointer self, const caf::node_id& node) {
  auto& st = self->state;
  return st.options.credential.empty() || node == self->node() || st.trusted.count(node) > 0;
}

// Nothing but hello is served to a process that did not present the cluster's credential.
caf::error refusal(registry_pointer self) {
  auto sender = self->current_sender();
  if (sender != nullptr && is_trusted(self, sender->node()))
    return {};
  return make_error(errc::permission_denied,
                    "this cluster needs its secret: pass --secret-file (refused by the seed)");
}

caf::result<ok_atom> hello(registry_pointer self, const std::string& credential) {
  auto sender = self->current_sender();
  if (sender == nullptr)
    return make_error(errc::permission_denied, "anonymous hello");
  if (!self->state.options.credential.empty() &&
      !same_credential(credential, self->state.options.credential)) {
    log_warn("registry: refused process {}: wrong or missing cluster secret",
             to_string(sender->node()));
    return make_error(errc::permission_denied,
                      "the seed refused this process: wrong or missing cluster secret");
  }
  self->state.trusted.insert(sender->node());
  return ok_atom::value;
}

void prune(registry_pointer self) {
  auto now = std::chrono::steady_clock::now();
  auto& members = self->state.members;
  for (auto i = members.begin(); i != members.end();) {
    if (i->second.info.state != member_state::up &&
        now - i->second.retired > self->state.options.prune_after)
      i = members.erase(i);
    else
      ++i;
  }
}

cluster_status snapshot(registry_pointer self) {
  cluster_status result;
  result.seed = self->state.options.seed;
  result.now_ms = unix_ms();
  for (auto& [name, record] : self->state.members)
    result.members.push_back(record.info);
  for (auto& [name, service] : self->state.services)
    result.services.push_back(service);
  return result;
}

} // namespace

registry_actor::behavior_type registry(registry_pointer self, registry_options options) {
  self->state.options = std::move(options);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto reason = "connection lost (" + render(msg.reason) + ")";
    for (auto& [name, record] : self->state.members)
      if (record.info.agent.address() == msg.source) {
        retire_member(self, name, member_state::down, reason);
        break;
      }
    auto& services = self->state.services;
    for (auto s = services.begin(); s != services.end();) {
      auto next = std::next(s);
      if (s->second.actor.address() == msg.source)
        drop_service(self, s, "actor exited (" + render(msg.reason) + ")");
      s = next;
    }
    auto& subs = self->state.subscribers;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [&](const caf::actor& a) { return a.address() == msg.source; }),
               subs.end());
  });
  self->delayed_send(self, self->state.options.heartbeat_interval, tick_atom::value);
  return {
    [self](hello_atom, const std::string& credential) { return hello(self, credential); },
    [self](trusted_atom, const caf::node_id& node) -> caf::result<bool> {
      if (auto err = refusal(self))
        return err;
      return is_trusted(self, node);
    },
    [self](join_atom, member_info info) -> caf::result<cluster_status> {
      if (auto err = refusal(self))
        return err;
      if (info.name.empty() || !info.agent)
        return make_error(errc::invalid_argument, "a member needs a name and an agent");
      auto& members = self->state.members;
      auto i = members.find(info.name);
      if (i != members.end() && i->second.info.state == member_state::up) {
        if (i->second.info.agent != info.agent)
          return make_error(errc::duplicate_node, info.name);
        return snapshot(self);
      }
      if (info.joined_ms == 0)
        info.joined_ms = unix_ms();
      auto& record = members[info.name];
      record.info = std::move(info);
      admit(self, record, {});
      return snapshot(self);
    },
    [self](leave_atom, const std::string& name) -> caf::result<ok_atom> {
      if (auto err = refusal(self))
        return err;
      retire_member(self, name, member_state::left, "left the cluster");
      return ok_atom::value;
    },
    [self](heartbeat_atom, const std::string& name, uint64_t incarnation) -> caf::result<uint64_t> {
      if (auto err = refusal(self))
        return err;
      return heartbeat(self, name, incarnation);
    },
    [self](register_atom, service_info service) -> caf::result<ok_atom> {
      if (auto err = refusal(self))
        return err;
      if (service.name.empty() || !service.actor)
        return make_error(errc::invalid_argument, "a service needs a name and an actor");
      // A member that is down has been given up: what it starts now is fenced.
      if (auto m = self->state.members.find(service.node);
          m != self->state.members.end() && m->second.info.state != member_state::up)
        return make_error(errc::node_unreachable, "service " + service.name + " on node " +
                                                    service.node + ", which is " +
                                                    to_string(m->second.info.state));
      auto& services = self->state.services;
      auto i = services.find(service.name);
      if (i != services.end() && i->second.actor == service.actor)
        return ok_atom::value;
      self->monitor(service.actor);
      services[service.name] = service;
      publish(self,
              {cluster_event_kind::service_up, service.node, service.name, service.actor, {}});
      return ok_atom::value;
    },
    [self](unregister_atom, const std::string& name) -> caf::result<ok_atom> {
      if (auto err = refusal(self))
        return err;
      auto i = self->state.services.find(name);
      if (i != self->state.services.end())
        drop_service(self, i, "unregistered");
      return ok_atom::value;
    },
    [self](lookup_atom, const std::string& name) -> caf::result<service_info> {
      if (auto err = refusal(self))
        return err;
      auto i = self->state.services.find(name);
      if (i == self->state.services.end())
        return make_error(errc::unknown_service, name);
      return i->second;
    },
    [self](status_atom) -> caf::result<cluster_status> {
      if (auto err = refusal(self))
        return err;
      return snapshot(self);
    },
    [self](subscribe_atom, caf::actor subscriber) {
      if (!subscriber || refusal(self))
        return;
      self->monitor(subscriber);
      self->state.subscribers.push_back(std::move(subscriber));
    },
    [self](unsubscribe_atom, const caf::actor& subscriber) {
      if (refusal(self))
        return;
      auto& subs = self->state.subscribers;
      subs.erase(std::remove(subs.begin(), subs.end(), subscriber), subs.end());
    },
    [self](tick_atom) {
      auto now = std::chrono::steady_clock::now();
      auto timeout = self->state.options.heartbeat_timeout;
      std::vector<std::string> expired;
      for (auto& [name, record] : self->state.members)
        if (name != self->state.options.seed && record.info.state == member_state::up &&
            now - record.last_seen > timeout)
          expired.push_back(name);
      for (auto& name : expired)
        retire_member(self, name, member_state::down,
                      "no heartbeat for " + std::to_string(timeout.count()) + " ms");
      prune(self);
      self->delayed_send(self, self->state.options.heartbeat_interval, tick_atom::value);
    },
  };
}

} // namespace darcy::runtime
