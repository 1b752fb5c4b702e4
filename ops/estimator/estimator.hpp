// The Estimator: one model function for every mode, and the loops around it. train() owns the
// steps, the optimizer, the checkpoints (the one checkpoint mechanism: a parameter part with
// the Adam state, and the input position and global step in the manifest) and the hooks;
// evaluate() folds the model's metrics over an input; predict() returns its predictions.
//
//   estimator e{my_model_fn, {.model_dir = "/tmp/model"}};
//   e.train(train_input, 1000, {std::make_shared<nan_guard>()});
//   auto metrics = e.evaluate(test_input);     // {"accuracy": 0.89, "loss": 0.31, ...}
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "compute/nn/optimizers.hpp"
#include "ops/estimator/estimator_spec.hpp"
#include "ops/estimator/hooks.hpp"
#include "ops/estimator/input.hpp"
#include "ops/estimator/parameter_servers.hpp"
#include "ops/session.hpp"

namespace darcy::ops::estimator {

/// Hyperparameters the model function reads, by name.
using params = std::map<std::string, double>;

using model_fn =
  std::function<caf::expected<estimator_spec>(model_context&, const batch&, const params&)>;

class estimator;

struct run_config {
  /// Where checkpoints go; empty: no checkpoints, nothing is restored.
  std::string model_dir;
  /// Warm start (continuous training in rounds): while model_dir holds no checkpoint, the
  /// variables, their Adam state, the dynamic embeddings and the global step start from the
  /// newest checkpoint in this directory; the input starts afresh. Empty: from scratch.
  std::string warm_start_from;
  /// A checkpoint every this many steps during train() (0: only at its end).
  uint64_t save_checkpoints_steps = 0;
  size_t keep_checkpoint_max = 5;
  /// Seeds the variables' initial values.
  uint64_t seed = 1;
  /// Threads of the model's products.
  size_t threads = 2;
  /// Of the dense variables (the embeddings' optimizers are their tables').
  optimizer_config optimizer = compute::adam_optimizer(1e-3f);
  /// Of optimizer.learning_rate by global step, here or on the parameter servers.
  learning_rate_schedule schedule;
  /// The session whose embedding service holds the model's dynamic embeddings, if any: every
  /// checkpoint then saves the service too (ops::save, inside the checkpoint's directory,
  /// before the manifest that names it) and a resume restores it.
  session* embeddings = nullptr;
  /// The parameter servers that hold the dense variables, if any (asynchronous training: each
  /// step pulls their values and pushes its gradients; the servers' Adam applies them, and
  /// global_step counts the steps of every worker). Not owned; one per estimator.
  parameter_servers* servers = nullptr;
  /// Which server holds each dense variable (empty: round robin); the estimator gives it to
  /// `servers`. Every role of a job must use the same one.
  variable_placement placement;
  /// With servers: the chief loads them (from the newest checkpoint in model_dir, or with the
  /// fresh variables) when its variables are built, and its checkpoints save their state.
  /// Other workers wait for the chief's load; they should have no model_dir.
  bool chief = true;
  /// Called once, when the variables are built and restored from model_dir (its argument: the
  /// restored global step, 0 for none), before a chief loads its servers. It may load newer
  /// state into the variables, their optimizer and the embeddings (a stream job's last sync)
  /// and answers the global step to go on from: its argument when it loaded nothing. Another
  /// step drops the checkpoint's input position (train() has already sought its input when it
  /// builds; build() then train() starts the input afresh). Its error ends the build.
  std::function<caf::expected<uint64_t>(estimator&, uint64_t restored_step)> after_restore;
};

/// The phases of a training step, in the order a step runs them.
inline constexpr std::array<const char*, 6> step_phase_names = {"input",    "pull",   "forward",
                                                                "backward", "update", "hooks"};

struct train_result {
  uint64_t global_step = 0;
  float last_loss = 0;
  /// Steps this call ran, and the examples of their batches.
  uint64_t steps = 0;
  uint64_t examples = 0;
  /// The global step the call started from: > 0 when it resumed from a checkpoint.
  uint64_t resumed_from = 0;
  /// Seconds this call spent in each phase of its steps, by phase name: input, pull (with
  /// servers), forward, backward, update and hooks. Every node's /metrics carries the same
  /// phases for all calls, as the histogram darcy_estimator_step_seconds{phase}. Within them,
  /// "forward.embedding_lookup" and "backward.embedding_update": the dynamic embedding
  /// columns' time in the embedding service.
  std::map<std::string, double> phase_seconds;
};

class estimator {
public:
  estimator(model_fn fn, run_config cfg, params p = {});

  /// Trains until the input ends, a hook stops it, or the global step reaches `max_steps`
  /// (0: no limit). Resumes from the newest checkpoint in model_dir, input position included,
  /// and saves one at the end. Errors of the model function, the input or a hook end it, and
  /// so does a failed backward of the embedding service, by the end of the call at the latest.
  caf::expected<train_result> train(const input_fn& input, uint64_t max_steps,
                                    std::vector<hook_ptr> hooks = {});

  /// The model's metrics over `input` (or its first `steps` batches; 0: all), plus "loss" (the
  /// example-weighted mean loss) and "global_step".
  caf::expected<std::map<std::string, double>> evaluate(const input_fn& input, uint64_t steps = 0);

  /// The predictions of every batch of `input`, stacked.
  caf::expected<matrix> predict(const input_fn& input);

  /// The layers the model runs in predict mode on `b`, as the graph an export saves.
  caf::expected<nlohmann::json> trace(const batch& b);

  /// Saves a checkpoint of the current variables now (with servers: of theirs, fetched first).
  /// errc::invalid_config without model_dir.
  caf::error save_checkpoint();

  /// Builds the variables from the first batch of `input` and restores the newest checkpoint,
  /// as the first step of train() would; a chief with servers then loads them. Does nothing
  /// once the variables exist.
  caf::error build(const input_fn& input);

  /// Reads the newest checkpoint in model_dir into the variables again (an evaluator following
  /// a chief). Precondition: the variables are built. errc::not_found without a checkpoint.
  caf::error reload();

  uint64_t global_step() const { return global_step_; }
  /// The rows the dynamic embeddings held right after the last restore from a checkpoint.
  uint64_t restored_embedding_rows() const { return restored_rows_; }
  const run_config& config() const { return cfg_; }
  variable_store& variables() { return vars_; }
  /// The dense variables' optimizer, with its state (slots, step count).
  compute::nn::optimizer& optimizer() { return optimizer_; }
  /// With parameter servers: their variables and optimizer state into this estimator's, which
  /// must be built, and the global step. Without, nothing changes. The servers' errors.
  caf::expected<uint64_t> fetch_server_state();

private:
  struct run {
    std::unique_ptr<model_context> ctx; // the spec's train op refers to it
    estimator_spec spec;
  };
  /// Runs the model on `b` in mode `m`; the first call in this process creates the variables
  /// and restores them from the newest checkpoint (errc::dimension_mismatch if the model no
  /// longer fits it), then runs again on the restored values.
  caf::expected<run> call(mode m, const batch& b, bool trace = false);
  caf::error restore_variables();
  /// With servers, after the variables are built: the chief loads them, a worker pulls.
  caf::error join_servers();
  /// Runs the model in mode `m` on each batch of `input` (the first `limit`; 0: all) and hands
  /// each to `f`; the first error ends it.
  caf::error for_each_batch(const input_fn& input, mode m, uint64_t limit,
                            const std::function<caf::error(const batch&, run&)>& f);
  /// The newest checkpoint's input position, or empty.
  caf::expected<std::string> checkpoint_position();

  model_fn fn_;
  run_config cfg_;
  params params_;
  variable_store vars_;
  compute::nn::optimizer optimizer_;
  uint64_t global_step_ = 0;
  uint64_t restored_rows_ = 0;
  /// The global step of the newest checkpoint this estimator saved or restored.
  uint64_t saved_step_ = 0;
  std::string input_position_;
  /// A restore read input_position_ and no train() has continued from it yet.
  bool seek_pending_ = false;
  bool built_ = false;
};

} // namespace darcy::ops::estimator
