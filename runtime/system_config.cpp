#include "runtime/system_config.hpp"

#include <chrono>

#include <caf/io/middleman.hpp>

#include "messages/registration.hpp"
#include "runtime/cluster/chaos.hpp"
#include "runtime/cluster/supervisor.hpp"
#include "runtime/tls.hpp"

namespace darcy::runtime {

system_config::system_config(std::string name, size_t threads) : node_name(std::move(name)) {
  register_types(*this);
  load<caf::io::middleman>();
  configure_tls(*this);
  set("middleman.enable-automatic-connections", true);
  // Schedule the middleman's utility actors instead of detaching them: in CAF 0.17 a detached
  // actor can block ~actor_system forever in await_detached_threads (CAF issues #1110, #1196).
  set("middleman.attach-utility-actors", true);
  set("logger.console", caf::atom("none"));
  // Deserialize BASP messages in the multiplexer's own thread instead of handing each to a
  // worker: one thread hop less per message halves the remote 1 KiB round trip on small
  // machines (`darcy-bench messaging`: remote_vs_tcp_1k 0.47 -> 0.63, docs/benchmarks.md).
  set("middleman.workers", size_t{0});
  // Idle workers block on a condition variable instead of polling: on small machines that run
  // several nodes, polling workers steal the cores that remote round trips need.
  set("scheduler.policy", caf::atom("sharing"));
  if (threads > 0)
    set("scheduler.max-threads", threads);
  add_actor_type(supervisor_state::name, supervisor);
  add_actor_type(chaos_gate_state::name, chaos_gate);
}

std::string node_name(const caf::actor_system& sys) {
  if (auto cfg = dynamic_cast<const system_config*>(&sys.config()))
    return cfg->node_name;
  return "local";
}

int64_t unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

} // namespace darcy::runtime
