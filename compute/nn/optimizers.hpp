// Optimizers for dense parameters (Adam, Adagrad) with TensorFlow's update rules, plus
// global-norm clipping and a finite check for a NaN guard. A step applies each parameter's
// grad and sets it back to zero; slots are kept per parameter, which must outlive the
// optimizer.
//
//   nn::adam<float> opt{{.learning_rate = 1e-3}};
//   nn::clip_by_global_norm(params, 5.0f);
//   opt.step(params);
#pragma once

#include <unordered_map>

#include "compute/nn/tensor.hpp"
#include "messages/errc.hpp"

namespace darcy::compute::nn {

struct adam_config {
  double learning_rate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
};

struct adagrad_config {
  double learning_rate = 0.1;
  double initial_accumulator = 0.1;
};

/// errc::invalid_config naming the field: a learning rate or epsilon that is not positive and
/// finite, betas outside [0, 1), a negative accumulator.
plain_error validate(const adam_config& cfg);
plain_error validate(const adagrad_config& cfg);

/// An Adam optimizer's state for a list of parameters, in the list's order: what a checkpoint
/// saves. A parameter never stepped has zero moments.
template <class T>
struct adam_slots {
  uint64_t steps = 0;
  std::vector<matrix_t<T>> m;
  std::vector<matrix_t<T>> v;
};

/// θ ← θ − lr · m̂ / (sqrt(v̂) + ε), with bias-corrected moments (one step count for all).
template <class T>
class adam {
public:
  /// Precondition: validate(cfg) passed.
  explicit adam(adam_config cfg) : cfg_(cfg) {}
  void step(const parameter_list<T>& params);

  adam_slots<T> export_slots(const parameter_list<T>& params) const;
  /// Replaces the state of `params` (and the step count) with `slots`. Precondition: one m and
  /// one v per parameter, each of its parameter's shape.
  void import_slots(const parameter_list<T>& params, adam_slots<T> slots);

private:
  struct slots {
    matrix_t<T> m;
    matrix_t<T> v;
  };
  adam_config cfg_;
  uint64_t steps_ = 0;
  std::unordered_map<const parameter<T>*, slots> slots_;
};

/// accumulator += g²; θ ← θ − lr · g / sqrt(accumulator).
template <class T>
class adagrad {
public:
  /// Precondition: validate(cfg) passed.
  explicit adagrad(adagrad_config cfg) : cfg_(cfg) {}
  void step(const parameter_list<T>& params);

private:
  adagrad_config cfg_;
  std::unordered_map<const parameter<T>*, matrix_t<T>> accumulators_;
};

/// Scales every grad by max_norm / norm when their joint L2 norm exceeds max_norm; returns the
/// norm before clipping.
template <class T>
T clip_by_global_norm(const parameter_list<T>& params, T max_norm);

/// True when every grad is finite.
template <class T>
bool grads_finite(const parameter_list<T>& params);

} // namespace darcy::compute::nn
