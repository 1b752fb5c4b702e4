// Hooks of Estimator::train: code that runs before the first step, before and after every step
// and at the end, without touching the training loop. A hook may stop training (stop_at_step, the
// time-based stop), fail it (the NaN guard), save checkpoints (checkpoint_saver) or report
// (logging, step counter, summary writer, progress bar).
//
//   auto hooks = {std::make_shared<stop_at_step>(1000), std::make_shared<nan_guard>()};
//   estimator.train(input, 0, hooks);
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "compute/nn/tensor.hpp"
#include "ops/estimator/input.hpp"

namespace darcy::ops::estimator {

class estimator;

/// What a hook sees after a step.
struct step_result {
  uint64_t global_step = 0;
  float loss = 0;
  /// Examples in the step's batch.
  size_t examples = 0;
  /// Seconds since this train() call began.
  double seconds = 0;
};

enum class hook_action : uint8_t { go_on, stop };

class session_run_hook {
public:
  virtual ~session_run_hook() = default;
  virtual caf::error begin(estimator& e, uint64_t global_step);
  /// Called before each step's gradients are computed and applied (after its forward pass;
  /// after begin on the first step), with the global step the step starts from. An error ends
  /// train() with it, as after_step's.
  virtual caf::error before_step(estimator& e, uint64_t global_step);
  /// Called after the optimizer applied the step. An error ends train() with it, without the
  /// final checkpoint: the last saved one stays the newest.
  virtual caf::expected<hook_action> after_step(estimator& e, const step_result& r);
  virtual caf::error end(estimator& e, uint64_t global_step);
};

using hook_ptr = std::shared_ptr<session_run_hook>;

/// Stops once the global step reaches `last`.
class stop_at_step final : public session_run_hook {
public:
  explicit stop_at_step(uint64_t last) : last_(last) {}
  caf::expected<hook_action> after_step(estimator& e, const step_result& r) override;

private:
  uint64_t last_;
};

/// Stops after the step during which `flag` became true: how another thread (a worker actor
/// told to exit) ends a training loop. The flag must outlive the hook.
class stop_on_flag final : public session_run_hook {
public:
  explicit stop_on_flag(const std::atomic<bool>& flag) : flag_(flag) {}
  caf::expected<hook_action> after_step(estimator&, const step_result&) override {
    return flag_.load() ? hook_action::stop : hook_action::go_on;
  }

private:
  const std::atomic<bool>& flag_;
};

/// Stops once `limit` has passed since begin(): the paper's example hook.
class stop_after_time final : public session_run_hook {
public:
  explicit stop_after_time(std::chrono::duration<double> limit) : limit_(limit) {}
  caf::error begin(estimator& e, uint64_t global_step) override;
  caf::expected<hook_action> after_step(estimator& e, const step_result& r) override;

private:
  std::chrono::duration<double> limit_;
  std::chrono::steady_clock::time_point start_;
};

/// Fails training with errc::invalid_argument ("loss is NaN at step N") at the first
/// non-finite loss, so that no checkpoint of the diverged model is saved.
class nan_guard final : public session_run_hook {
public:
  caf::expected<hook_action> after_step(estimator& e, const step_result& r) override;
};

/// Saves a checkpoint every `every_steps` steps (0: never by steps) and every `every_seconds`
/// seconds (0: never by time), keeping the estimator's keep_checkpoint_max newest.
class checkpoint_saver final : public session_run_hook {
public:
  checkpoint_saver(uint64_t every_steps, double every_seconds = 0)
    : every_steps_(every_steps), every_seconds_(every_seconds) {}
  caf::error begin(estimator& e, uint64_t global_step) override;
  caf::expected<hook_action> after_step(estimator& e, const step_result& r) override;

private:
  uint64_t every_steps_;
  double every_seconds_;
  double last_save_ = 0;
};

/// Writes "step N  loss L  S steps/s  E examples/s" to `out` every `every_steps` steps.
class logging_hook final : public session_run_hook {
public:
  logging_hook(std::ostream& out, uint64_t every_steps) : out_(out), every_steps_(every_steps) {}
  caf::error begin(estimator& e, uint64_t global_step) override;
  caf::expected<hook_action> after_step(estimator& e, const step_result& r) override;

  /// Steps per second over the last logged window (0 before the first window ends).
  double steps_per_second() const { return rate_; }

private:
  std::ostream& out_;
  uint64_t every_steps_;
  uint64_t window_step_ = 0;
  double window_start_ = 0;
  size_t window_examples_ = 0;
  double rate_ = 0;
};

/// Opens a summary JSONL file for appending. A file whose last line a killed writer left
/// unfinished gets a newline first, so that the torn line stays on a line of its own. The
/// stream is in a failed state when the file cannot be opened.
std::ofstream open_summary(const std::string& path);

/// Appends {"step":N,"loss":L,"seconds":S} lines to a JSONL file (open_summary) every
/// `every_steps` steps; a loss that is not finite is written as null.
class summary_writer final : public session_run_hook {
public:
  summary_writer(std::string path, uint64_t every_steps)
    : path_(std::move(path)), every_steps_(every_steps) {}
  caf::error begin(estimator& e, uint64_t global_step) override;
  caf::expected<hook_action> after_step(estimator& e, const step_result& r) override;

private:
  std::string path_;
  uint64_t every_steps_;
  std::ofstream out_;
};

/// Evaluates every `every_steps` steps on `input` and stops when `metric` has not improved by
/// more than `min_delta` for `patience` evaluations in a row; at the end of training the
/// variables go back to those of the best evaluation (so the final checkpoint holds them).
/// errc::invalid_config when the evaluation has no such metric.
class early_stopping final : public session_run_hook {
public:
  struct options {
    std::string metric = "loss";
    bool higher_is_better = false;
    double min_delta = 0;
    uint32_t patience = 3;
    uint64_t every_steps = 100;
    bool restore_best = true;
  };
  /// `input` makes a fresh evaluation pipeline each time.
  early_stopping(input_fn input, options o) : input_(std::move(input)), o_(std::move(o)) {}
  caf::error begin(estimator& e, uint64_t global_step) override;
  caf::expected<hook_action> after_step(estimator& e, const step_result& r) override;
  caf::error end(estimator& e, uint64_t global_step) override;

  /// The best value so far and the global step it was measured at (0: none yet).
  double best() const { return best_; }
  uint64_t best_step() const { return best_step_; }

private:
  input_fn input_;
  options o_;
  double best_ = 0;
  uint64_t best_step_ = 0;
  uint32_t bad_ = 0;
  std::map<std::string, compute::nn::matrix> best_values_;
};

} // namespace darcy::ops::estimator
