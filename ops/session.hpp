// A model author's handle on a cluster: either an in-process cluster (one seed node inside this
// process, no network listener) or a running cluster reached through its seed's address. The
// calls are the same either way.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "messages/interfaces.hpp"
#include "runtime/host_port.hpp"
#include "runtime/node_services.hpp"
#include "runtime/system_config.hpp"

namespace darcy::ops {

struct session_options {
  /// Empty: start an in-process cluster. Otherwise: join nothing, just talk to this seed.
  std::optional<runtime::host_port> seed;
  std::string name = "local";
  std::chrono::milliseconds timeout{5000};
  size_t threads = 0;
};

class session {
public:
  /// Fails with errc::node_unreachable when `opts.seed` does not answer.
  static caf::expected<std::unique_ptr<session>> open(session_options opts);

  ~session();

  caf::actor_system& system() { return *system_; }
  const registry_actor& registry() const { return registry_; }
  std::chrono::milliseconds timeout() const { return opts_.timeout; }

  caf::expected<cluster_status> status();

  /// Resolves `service` through the registry; errc::unknown_service when absent.
  caf::expected<service_info> lookup(const std::string& service);

  /// Spawns a supervisor in this process.
  supervisor_actor supervise(supervisor_spec spec);

private:
  explicit session(session_options opts);

  session_options opts_;
  std::unique_ptr<runtime::system_config> config_;
  std::unique_ptr<caf::actor_system> system_;
  registry_actor registry_;
  std::optional<runtime::node_services> local_;
};

} // namespace darcy::ops
