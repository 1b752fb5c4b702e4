#include "runtime/direct_connections.hpp"

#include <mutex>

#include <caf/actor_cast.hpp>
#include <caf/actor_proxy.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/message.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/scoped_actor.hpp>

namespace darcy::runtime {

namespace {

constexpr const char* connectivity_key = "basp.default-connectivity-tcp";
const auto config_server_name = caf::atom("ConfigServ");
const auto arbiter_name = caf::atom("DirectConn");

// Stands in for CAF's config server: answers a remote process's request for this process's
// address only when that process connects_directly to this one, and hands everything else on.
caf::behavior connection_arbiter(caf::event_based_actor* self, caf::actor original) {
  self->link_to(original);
  self->set_default_handler([original](caf::scheduled_actor* self,
                                       caf::message_view& x) -> caf::result<caf::message> {
    auto mid = self->take_current_message_id();
    auto* element = self->current_mailbox_element();
    original->enqueue(
      caf::make_mailbox_element(element->sender, mid, element->stages, x.move_content_to_message()),
      self->context());
    return caf::delegated<caf::message>{};
  });
  return {
    [self, original](caf::get_atom, std::string& key) -> caf::result<caf::message> {
      auto& sender = self->current_sender();
      if (key == connectivity_key && sender != nullptr && sender->node() != self->node() &&
          !connects_directly(sender->node(), self->node()))
        return caf::make_message(std::move(key), caf::message{});
      return self->delegate(original, caf::get_atom::value, std::move(key));
    },
  };
}

} // namespace

bool connects_directly(const caf::node_id& from, const caf::node_id& to) {
  return from < to;
}

void arbitrate_direct_connections(caf::actor_system& sys) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock{mutex};
  auto& registry = sys.registry();
  if (registry.get(arbiter_name) != nullptr)
    return;
  auto original = caf::actor_cast<caf::actor>(registry.get(config_server_name));
  if (!original)
    return;
  auto arbiter = sys.spawn<caf::hidden>(connection_arbiter, original);
  registry.put(arbiter_name, caf::actor_cast<caf::strong_actor_ptr>(arbiter));
  // The registry's put never replaces an entry.
  registry.erase(config_server_name);
  registry.put(config_server_name, caf::actor_cast<caf::strong_actor_ptr>(arbiter));
}

caf::expected<std::string> direct_route(caf::actor_system& sys, const caf::node_id& node,
                                        std::chrono::milliseconds timeout) {
  auto broker = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::scoped_actor self{sys};
  caf::expected<std::string> result{caf::error{}};
  self->request(broker, timeout, caf::get_atom::value, node)
    .receive(
      [&](const caf::node_id&, const std::string& address, uint16_t port) {
        result = address.empty() ? std::string{} : address + ":" + std::to_string(port);
      },
      [&](caf::error& err) { result = std::move(err); });
  return result;
}

bool is_lost_proxy(const caf::actor& handle) {
  if (!handle)
    return false;
  auto* proxy = dynamic_cast<caf::actor_proxy*>(caf::actor_cast<caf::abstract_actor*>(handle));
  return proxy != nullptr && proxy->getf(caf::abstract_actor::is_cleaned_up_flag);
}

} // namespace darcy::runtime
