#include "runtime/cluster/chaos.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/message_view.hpp>
#include <caf/scoped_actor.hpp>

#include <map>
#include <mutex>

#include <unistd.h>

#include "base/atomic_file.hpp"
#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/client.hpp"

namespace darcy::runtime {

namespace {

// A uniform draw in [0, 1) that does not depend on the standard library's distributions.
double draw(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

caf::expected<member_info> find_member(caf::actor_system& sys, const registry_actor& registry,
                                       const std::string& node, std::chrono::milliseconds timeout) {
  auto status = ask<cluster_status>(sys, registry, timeout, status_atom::value);
  if (!status)
    return std::move(status.error());
  for (auto& m : status->members)
    if (m.name == node && m.state == member_state::up)
      return m;
  return make_error(errc::unknown_node, node + " is not a live member");
}

// Gates by the address of the actor behind them, for every actor system in this process.
std::mutex gates_mutex;
std::map<caf::actor_addr, caf::actor_addr> gates;

} // namespace

caf::actor public_handle(const caf::actor& self) {
  std::lock_guard<std::mutex> guard{gates_mutex};
  if (auto i = gates.find(self.address()); i != gates.end())
    if (auto gate = caf::actor_cast<caf::actor>(i->second))
      return gate;
  return self;
}

void remember_gate(const caf::actor& target, const caf::actor& gate) {
  {
    std::lock_guard<std::mutex> guard{gates_mutex};
    gates[target.address()] = gate.address();
  }
  gate->attach_functor([key = target.address()] {
    std::lock_guard<std::mutex> guard{gates_mutex};
    gates.erase(key);
  });
}

void write_fault_pid(const std::string& path) {
  if (!path.empty())
    (void)base::write_file_atomically(path, std::to_string(::getpid()) + "\n");
}

caf::behavior chaos_gate(caf::stateful_actor<chaos_gate_state>* self, caf::actor target,
                         disruption plan) {
  auto& st = self->state;
  st.target = std::move(target);
  st.plan = plan;
  st.rng.seed(plan.seed);
  self->link_to(st.target);
  // A normal exit of the target ends the gate too; the link handles every other reason.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (msg.source == self->state.target.address() || msg.reason != caf::exit_reason::normal)
      self->quit(msg.reason);
  });
  self->set_default_handler(
    [self](caf::scheduled_actor*, caf::message_view& view) -> caf::result<caf::message> {
      auto& st = self->state;
      auto promise = self->make_response_promise();
      auto content = view.move_content_to_message();
      if (st.plan.drop > 0 && draw(st.rng) < st.plan.drop) {
        ++st.stats.dropped;
        return caf::delegated<caf::message>{};
      }
      if (st.plan.delay_ms > 0 && st.plan.delay > 0 && draw(st.rng) < st.plan.delay) {
        ++st.stats.delayed;
        auto id = st.next_id++;
        st.delayed.emplace(id, chaos_gate_state::held{std::move(promise), std::move(content)});
        self->delayed_send(self, std::chrono::milliseconds(st.plan.delay_ms), release_atom::value,
                           id);
        return caf::delegated<caf::message>{};
      }
      ++st.stats.forwarded;
      promise.delegate(st.target, std::move(content));
      return caf::delegated<caf::message>{};
    });
  return {
    [self](const chaos_command& cmd) -> caf::result<chaos_stats> {
      auto sender = self->current_sender();
      if (sender == nullptr || sender->node() != self->node())
        return make_error(errc::permission_denied,
                          "a chaos gate takes commands from its own node's agent only");
      if (cmd.op == chaos_op::disrupt)
        if (auto err = validate(cmd.plan))
          return err;
      auto& st = self->state;
      auto counts = st.stats;
      if (cmd.op == chaos_op::stats)
        return counts;
      st.plan = cmd.op == chaos_op::disrupt ? cmd.plan : disruption{};
      st.rng.seed(st.plan.seed);
      st.stats = {};
      return counts;
    },
    [self](release_atom, uint64_t id) {
      auto& st = self->state;
      auto i = st.delayed.find(id);
      if (i == st.delayed.end())
        return;
      ++st.stats.forwarded;
      i->second.promise.delegate(st.target, std::move(i->second.content));
      st.delayed.erase(i);
    },
  };
}

caf::error kill_service(caf::actor_system& sys, const registry_actor& registry,
                        const std::string& service, std::chrono::milliseconds timeout) {
  auto info = resolve(sys, registry, service, timeout);
  if (!info)
    return std::move(info.error());
  caf::anon_send_exit(info->actor, caf::exit_reason::kill);
  return {};
}

caf::error kill_node(caf::actor_system& sys, const registry_actor& registry,
                     const std::string& node, std::chrono::milliseconds timeout) {
  auto member = find_member(sys, registry, node, timeout);
  if (!member)
    return std::move(member.error());
  // Sent with a sender: a node with a cluster secret checks who asks.
  caf::scoped_actor self{sys};
  self->send(caf::actor_cast<node_agent_actor>(member->agent), kill_node_atom::value);
  return {};
}

namespace {

/// Passes `command` for `gate` (invalid: the whole node) to the agent of `node`. The agent's and
/// the gates' own errors pass unchanged; a transport error names `what`.
caf::expected<chaos_stats> ask_agent(caf::actor_system& sys, const registry_actor& registry,
                                     const std::string& node, const chaos_command& command,
                                     const caf::actor& gate, std::chrono::milliseconds timeout,
                                     const std::string& what) {
  if (command.op == chaos_op::disrupt)
    if (auto err = validate(command.plan))
      return err;
  auto member = find_member(sys, registry, node, timeout);
  if (!member)
    return std::move(member.error());
  auto stats =
    ask<chaos_stats>(sys, caf::actor_cast<node_agent_actor>(member->agent), timeout, command, gate);
  if (!stats && stats.error().category() != errc_category)
    return make_error(errc::node_unreachable, what + ": " + render(stats.error()));
  return stats;
}

} // namespace

caf::expected<chaos_stats> command_node(caf::actor_system& sys, const registry_actor& registry,
                                        const std::string& node, const chaos_command& command,
                                        std::chrono::milliseconds timeout) {
  return ask_agent(sys, registry, node, command, caf::actor{}, timeout, "node " + node);
}

caf::error validate(const disruption& plan) {
  auto fraction = [](double x) { return x >= 0 && x <= 1; };
  if (!fraction(plan.drop) || !fraction(plan.delay) || plan.delay_ms < 0)
    return make_error(errc::invalid_argument,
                      "drop and delay must be fractions in [0, 1] and delay_ms >= 0");
  return {};
}

caf::expected<chaos_stats> command_gate(caf::actor_system& sys, const registry_actor& registry,
                                        const std::string& service, const chaos_command& command,
                                        std::chrono::milliseconds timeout) {
  auto info = resolve(sys, registry, service, timeout);
  if (!info)
    return std::move(info.error());
  return ask_agent(sys, registry, info->node, command, info->actor, timeout,
                   "service " + service + " on node " + info->node);
}

} // namespace darcy::runtime
