// The optimizer of dense parameters: the update rules of the in-shard optimizers
// (compute/optimizer.hpp: SGD, Adagrad, Momentum, Adam, FTRL), applied to each parameter as one
// row of its size, plus global-norm clipping and a finite check for a NaN guard. A step applies
// each parameter's grad and sets it back to zero.
//
//   nn::optimizer opt{adam_optimizer(1e-3f)};
//   nn::clip_by_global_norm(params, 5.0f);
//   opt.step(params);
#pragma once

#include <unordered_map>

#include "compute/nn/tensor.hpp"
#include "compute/optimizer.hpp"

namespace darcy::compute::nn {

/// An optimizer's state for a list of parameters, in the list's order: what a checkpoint saves.
/// `slots[k][i]` is slot k (Adam: m, v; Adagrad: the accumulator; FTRL: accumulator, linear)
/// of parameter i, of its parameter's shape. A parameter never stepped has its starting slots.
struct optimizer_slots {
  uint64_t steps = 0;
  std::vector<std::vector<matrix>> slots;
};

/// All parameters share one step count (Adam's bias correction), counted by step().
class optimizer {
public:
  /// Precondition: validate(cfg) passed.
  explicit optimizer(optimizer_config cfg) : cfg_(cfg) {}

  const optimizer_config& config() const { return cfg_; }
  /// The rate of the steps from now on (a schedule sets it before each step).
  void set_learning_rate(float rate) { cfg_.learning_rate = rate; }
  size_t slot_count() const { return compute::slot_count(cfg_); }

  /// Precondition: every grad is finite (grads_finite). A moving statistic's grad is
  /// subtracted as it is (is_moving_statistic).
  void step(const parameter_list<float>& params);

  optimizer_slots export_slots(const parameter_list<float>& params) const;
  /// Replaces the state of `params` (and the step count) with `slots`. Precondition:
  /// slot_count() lists of one matrix per parameter, each of its parameter's shape.
  void import_slots(const parameter_list<float>& params, optimizer_slots slots);

private:
  /// The slots of `p`, slot_count() consecutive blocks of p's size; started when absent.
  std::vector<float>& slots_of(const parameter<float>& p);

  optimizer_config cfg_;
  uint64_t steps_ = 0;
  std::unordered_map<const parameter<float>*, std::vector<float>> slots_;
};

/// Scales every grad by max_norm / norm when their joint L2 norm exceeds max_norm; returns the
/// norm before clipping. Moving statistics are neither counted nor scaled.
template <class T>
T clip_by_global_norm(const parameter_list<T>& params, T max_norm);

/// True when every grad is finite.
template <class T>
bool grads_finite(const parameter_list<T>& params);

} // namespace darcy::compute::nn
