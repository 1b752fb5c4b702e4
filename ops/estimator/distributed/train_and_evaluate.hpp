// The paper's Experiment in one process: parameter-server actors, a chief and workers training
// asynchronously in their own threads, and an evaluator following the chief's checkpoints.
// The same roles run as `darcy node` processes through apps/estimator's cluster job; this is
// the single-machine form of it, and what the scaling benchmark measures.
//
//   auto r = train_and_evaluate(sys, [] { return dnn_model(options); }, {.model_dir = dir}, {},
//                               {.input = [&](size_t worker) { return shard(worker); },
//                                .max_steps = 5000},
//                               eval_spec{.input = test, .metric = "accuracy",
//                                         .higher_is_better = true, .export_dir = exports},
//                               {.workers = 2, .ps = 1});
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "ops/estimator/distributed/evaluator.hpp"

namespace darcy::ops::estimator {

/// Makes a role's model function. Each role calls it once: a model function's feature columns
/// own their embedding tables, so roles must not share one.
using model_factory = std::function<caf::expected<model_fn>()>;

struct train_spec {
  /// Worker i's input (0 is the chief); workers should read different orders or shards.
  std::function<input_fn(size_t worker)> input;
  /// The global step at which every worker stops; > 0.
  uint64_t max_steps = 0;
  /// Run by the chief only.
  std::vector<hook_ptr> chief_hooks;
};

struct cluster_shape {
  size_t workers = 1;
  size_t ps = 1;
};

struct experiment_result {
  /// The global step of the final checkpoint.
  uint64_t global_step = 0;
  /// Steps each worker ran, the chief first.
  std::vector<uint64_t> worker_steps;
  /// Every evaluation, the final checkpoint's last.
  std::vector<evaluation> evaluations;
  double seconds = 0;
};

/// Trains with `shape.workers` workers (the chief is worker 0) against `shape.ps` parameter
/// servers spawned in `sys`, and, with `eval`, evaluates new checkpoints while training runs
/// and the final one after it. errc::invalid_config for max_steps 0, no workers or servers,
/// or no model_dir; otherwise the first error of any role.
caf::expected<experiment_result> train_and_evaluate(caf::actor_system& sys,
                                                    const model_factory& make_model, run_config cfg,
                                                    params p, train_spec train,
                                                    std::optional<eval_spec> eval,
                                                    cluster_shape shape = {});

} // namespace darcy::ops::estimator
