#include "ops/session.hpp"

#include "actors/actor_types.hpp"
#include "runtime/ask.hpp"
#include "runtime/client.hpp"
#include "runtime/supervisor.hpp"

namespace darcy::ops {

session::session(session_options opts) : opts_(std::move(opts)) {
  config_ = std::make_unique<runtime::system_config>(opts_.name, opts_.threads);
  actors::register_actor_types(*config_);
  system_ = std::make_unique<caf::actor_system>(*config_);
  system_->await_actors_before_shutdown(false);
}

session::~session() {
  if (local_)
    local_->stop();
}

caf::expected<std::unique_ptr<session>> session::open(session_options opts) {
  std::unique_ptr<session> result{new session(std::move(opts))};
  auto& sys = result->system();
  if (result->opts_.seed) {
    auto handles = runtime::connect_cluster(sys, *result->opts_.seed, result->opts_.timeout);
    if (!handles)
      return std::move(handles.error());
    result->registry_ = handles->registry;
    sys.registry().put(registry_key, caf::actor_cast<caf::strong_actor_ptr>(handles->registry));
    return result;
  }
  runtime::node_options node;
  node.name = result->opts_.name;
  node.connect_timeout = result->opts_.timeout;
  result->local_ = runtime::start_node_services(sys, node, std::nullopt);
  result->registry_ = result->local_->registry;
  auto joined = runtime::join_cluster(sys, *result->local_, node, {"in-process", 0});
  if (!joined)
    return std::move(joined.error());
  return result;
}

caf::expected<cluster_status> session::status() {
  return runtime::ask<cluster_status>(*system_, registry_, opts_.timeout, status_atom::value);
}

caf::expected<service_info> session::lookup(const std::string& service) {
  return runtime::resolve(*system_, registry_, service, opts_.timeout);
}

supervisor_actor session::supervise(supervisor_spec spec) {
  return system_->spawn(runtime::supervisor, std::move(spec));
}

} // namespace darcy::ops
