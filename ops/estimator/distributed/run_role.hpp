// The roles of a distributed Estimator job as `darcy` processes, each a cluster node (the
// paper's Experiment): the chief is the seed; it spawns the parameter-server actors on the ps
// nodes and the training workers, under its supervisor, on the worker nodes, and owns the
// checkpoints and the summary. A ps task that dies and joins again is loaded from the last
// checkpoint (or the newer state the job keeps: role_options::on_restore). ps and worker
// processes host those actors until the chief is gone. The evaluator follows the checkpoints
// and exports each improvement.
//
//   export DARCY_CONFIG='{"cluster": {...}, "task": {"type": "ps", "index": 0}}'
//   run_role({.role = *role_from_environment(), .jobs = catalog, .job = "fashion-mnist",
//             .max_steps = 2000, .model_dir = "/shared/fm"}, std::cout);
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include <caf/error.hpp>
#include <nlohmann/json.hpp>

#include "ops/estimator/distributed/distributed_job.hpp"
#include "ops/estimator/distributed/roles.hpp"
#include "runtime/node_options.hpp"

namespace darcy::ops::estimator {

/// What the chief calls after each poll of the global step (role_options::on_step).
using chief_step_fn =
  std::function<caf::error(estimator& chief, session* embeddings, uint64_t step, bool done)>;

/// What the chief calls once its variables are restored, before it loads the parameter servers
/// (role_options::on_restore; run_config::after_restore's contract).
using chief_restore_fn = std::function<caf::expected<uint64_t>(estimator& chief, uint64_t step)>;

struct role_options {
  role_config role;
  /// The jobs every process of the job knows (the same catalog in each); `job` names one.
  std::shared_ptr<const job_catalog> jobs;
  std::string job;
  nlohmann::json job_options = nlohmann::json::object();
  /// The global step the job trains to.
  uint64_t max_steps = 1000;
  /// Checkpoints: the chief writes, the evaluator reads (one host or a shared file system).
  std::string model_dir;
  uint64_t save_checkpoints_steps = 200;
  /// The evaluator's exports (empty: none).
  std::string export_dir;
  /// The chief's summary: a JSONL line {global_step, seconds, steps_per_second} per checkpoint.
  std::string summary;
  /// How long the chief waits for a ps task whose node died to join again; it then loads
  /// every parameter server from the last checkpoint and the workers go on from its step.
  std::chrono::milliseconds ps_rejoin_timeout{120000};
  /// Heartbeats, secret and threads of the role's node; name, listen and join come from role.
  runtime::node_options node;
  /// The chief calls this after each poll of the global step (every 100 ms) with its estimator
  /// (built, its variables on the parameter servers), the job's embedding session (nullptr for
  /// a job without) and the global step, and once more with `done` after the last checkpoint;
  /// an error ends the job with it. A stream job writes its syncs for serving here. Empty: none.
  chief_step_fn on_step;
  /// The chief's run_config::after_restore in every round (its first, and each after a ps
  /// task is lost): a stream job resumes from its last sync when that is newer than the last
  /// checkpoint. Empty: none.
  chief_restore_fn on_restore;
};

/// Runs this process's role until it is done: the chief until the global step reaches
/// max_steps and every worker has finished (then it prints one JSON line; it fails when a ps
/// node dies and its task does not join again within ps_rejoin_timeout, or when a ps of a job
/// with embeddings dies), ps and worker
/// tasks until the chief is gone, the evaluator until it has evaluated a checkpoint at
/// max_steps (one JSON line per evaluation). Roles may start in any order: the others try to
/// join the chief for up to 120 s, as does a task started again before the chief has seen its
/// previous incarnation down. Errors name the role.
caf::error run_role(const role_options& o, std::ostream& out);

} // namespace darcy::ops::estimator
