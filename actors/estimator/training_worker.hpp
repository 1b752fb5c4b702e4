// A training worker as an actor, so that a supervisor can place it on a worker node and start
// it again elsewhere when that node dies. It runs its job's training loop once, in a detached
// helper actor (the loop blocks on the parameter servers, and must not hold a scheduler
// thread), and exits normally when the loop ends, or with the loop's error.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/error.hpp>

#include "messages/estimator/estimator_interfaces.hpp"
#include "runtime/system_config.hpp"

namespace darcy::actors {

/// Trains as worker `cfg.index` of job `cfg.job` until the global step reaches cfg.max_steps
/// or `stop` becomes true (checked after every step); blocks its caller.
using training_job = std::function<caf::error(caf::actor_system&, const worker_config& cfg,
                                              const std::atomic<bool>& stop)>;

/// The jobs a node can run, by name.
using training_jobs = std::map<std::string, training_job>;

/// The actor type name of training workers.
inline constexpr const char* training_worker_name = "darcy.training_worker";

/// Registers the training worker under training_worker_name; its spawn argument is a
/// worker_config. A worker of a job the node does not know exits with errc::invalid_config.
void add_training_worker_type(runtime::system_config& cfg,
                              std::shared_ptr<const training_jobs> jobs);

} // namespace darcy::actors
