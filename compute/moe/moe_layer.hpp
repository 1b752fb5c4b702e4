// A sparsely-gated mixture-of-experts layer in one process: y = Σ_i G(x)_i · E_i(x), with only
// the experts a gate selects computed. The gate (compute/moe/gate.hpp) picks the experts; each
// expert sees its examples as one block. The actor version (actors/moe) runs the same pieces
// with each expert in its own actor.
//
//   auto layer = moe::moe_layer<float>::make({.dim = 512, .gating = {.experts = 64, .k = 4,
//                                             .mask = mask_kind::batchwise}});
//   auto y = (*layer)->forward(x);     // batch × 512
//   auto loss = task_loss + (*layer)->aux_loss();
//   auto dx = (*layer)->backward(dy);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compute/moe/dispatch.hpp"
#include "compute/moe/expert.hpp"
#include "compute/moe/gate.hpp"
#include "compute/nn/layer.hpp"

namespace darcy::gpu {
class moe_layer;
}

namespace darcy::compute::moe {

/// errc::invalid_config: validate(cfg.gating, cfg.dim), a width of 0, an ffn without hidden
/// units.
plain_error validate(const moe_config& cfg);

template <class T>
class moe_layer final : public nn::layer<T> {
public:
  using matrix = matrix_t<T>;

  /// The layer with cfg.gating.experts experts, seeded by cfg.gating.seed; the error of
  /// validate(cfg) when it fails.
  static plain_expected<std::unique_ptr<moe_layer>> make(const moe_config& cfg);
  ~moe_layer() override;

  /// Moves the training forward and backward to CUDA device 0 (gpu/moe_layer; float layers
  /// only), to the same results up to float rounding. The parameters stay here: each forward
  /// uploads them and each backward adds the device's gradients to theirs, so optimizers and
  /// checkpoints are unchanged. A batchwise gate's thresholds still train here, and inference
  /// runs here. errc::unavailable without CUDA or a device; the layer stays on the CPU.
  plain_error use_gpu();
  bool on_gpu() const { return gpu_ != nullptr; }
  /// Back to the CPU for good, from the next forward.
  void leave_gpu() { drop_gpu({}); }
  /// Why the layer left the GPU, or empty: after a device failure it drops the device and
  /// computes that step, and the next ones, on the CPU.
  const std::string& gpu_error() const { return gpu_error_; }
  /// For tests of that fallback: the device in use fails after `calls` more of its calls
  /// (gpu::moe_layer::fail_after; four per training step). Nothing off the GPU.
  void fail_gpu_after(int calls);

  matrix forward(const matrix& x) override;
  matrix backward(const matrix& dy) override;
  /// The gate's parameters, then every expert's.
  parameter_list<T> parameters() override;
  void set_training(bool training) override;
  /// Threads for the gate's products, dispatch and combine; the experts run in parallel, each
  /// on one thread, in ranges of about equal examples.
  void set_threads(size_t threads) override;

  /// The step whose gate noise (noisy top-k) the next forward draws: a training loop sets it
  /// every step, so that each step draws new noise.
  void set_step(uint64_t step) {
    step_ = step;
    gate_.set_step(step);
  }

  /// The gate's auxiliary losses of the last forward.
  T aux_loss() const { return last_on_gpu_ ? gpu_aux_loss_ : gate_.aux_loss(); }
  gate<T>& gating() { return gate_; }
  moe::expert<T>& expert(uint32_t e) { return experts_[e]; }
  /// The last forward's plan: expert_batch(e) is how many examples expert e took. After a
  /// forward on the GPU it holds the offsets alone.
  const dispatch_plan& plan() const { return plan_; }

private:
  explicit moe_layer(const moe_config& cfg);
  /// The training forward and backward on the device; false after a device failure (the
  /// device is then dropped, its reason kept in gpu_error_).
  bool gpu_forward(const matrix& x, matrix& y);
  bool gpu_backward(const matrix& dy, matrix& dx);
  void drop_gpu(std::string reason);

  /// Runs body(e, first slot, slots) for every expert with examples, experts split across
  /// the threads.
  template <class Body>
  void for_each_expert(Body&& body);

  moe_config cfg_;
  gate<T> gate_;
  std::vector<moe::expert<T>> experts_;
  dispatch_plan plan_;
  // The last forward's dispatched inputs, FFN activations and outputs, slot by slot.
  matrix in_, hidden_, out_;
  size_t threads_ = 1;
  bool training_ = true;
  std::unique_ptr<gpu::moe_layer> gpu_;
  std::string gpu_error_;
  uint64_t step_ = 0;
  bool last_on_gpu_ = false;
  T gpu_aux_loss_ = 0;
  // The last forward's input on the GPU, for a CPU backward after a device failure.
  matrix gpu_x_;
};

} // namespace darcy::compute::moe
