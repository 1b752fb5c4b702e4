// Spawnable actor types that run on a thread of their own. A node spawns these by name for remote
// callers; their handlers may compute for seconds (a WALS block, a factor shard's Gramian)
// without holding up the scheduler threads that answer heartbeats and the registry.
#pragma once

#include <string>
#include <type_traits>

#include <caf/abstract_actor.hpp>
#include <caf/actor_factory.hpp>
#include <caf/actor_system_config.hpp>

namespace darcy::runtime {

/// Like cfg.add_actor_type(name, fun), but every actor spawned by `name` is detached. Such an
/// actor ends only on an exit message or quit: a node's agent sends one to each actor it spawned
/// as it stops, so the node's actor system does not wait on it forever.
template <class F>
void add_detached_actor_type(caf::actor_system_config& cfg, std::string name, F fun) {
  using handle = typename caf::infer_handle_from_fun<F>::type;
  if constexpr (!std::is_same_v<handle, caf::actor>)
    cfg.add_message_type<handle>(name);
  cfg.add_actor_factory(std::move(name), [make = caf::make_actor_factory(std::move(fun))](
                                           caf::actor_config& actor_cfg, caf::message& args) {
    actor_cfg.flags |= caf::abstract_actor::is_detached_flag;
    return make(actor_cfg, args);
  });
}

} // namespace darcy::runtime
