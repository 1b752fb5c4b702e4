// In-shard optimizers with TensorFlow's update rules (ApplyGradientDescent, ApplyAdagrad,
// ApplyMomentum with and without Nesterov, lazy Adam with a per-row step, ApplyFtrl). A row's
// optimizer state is `slots`: slot_count(cfg) consecutive vectors of the row's dimension.
#pragma once

#include <cstdint>
#include <span>

#include "compute/finite.hpp"
#include "messages/errc.hpp"
#include "messages/optimizer_config.hpp"

namespace darcy::compute {

/// Fails with errc::invalid_config naming the field: a non-positive learning rate, a negative
/// accumulator, betas outside [0, 1), and so on.
plain_error validate(const optimizer_config& cfg);

/// Adam at `learning_rate` with TensorFlow's defaults for the rest: the dense models' optimizer.
inline optimizer_config adam_optimizer(float learning_rate) {
  return {.kind = optimizer_kind::adam, .learning_rate = learning_rate};
}

/// errc::invalid_config: a decay power that is not positive and finite, or a decay that starts
/// before the warmup ends.
plain_error validate(const learning_rate_schedule& s);

/// The rate of the step that takes the global step from `step` to step + 1: `base` scaled by
/// (step + 1) / warmup_steps during the warmup, by ((end - step) / decay_steps)^power during
/// the decay (end = decay_start + decay_steps), 0 after it. Precondition: validate(s) passed.
float scheduled_rate(float base, const learning_rate_schedule& s, uint64_t step);

/// Vectors of optimizer state per row: SGD 0, Adagrad 1, Momentum 1, Adam 2, FTRL 2.
size_t slot_count(const optimizer_config& cfg);

/// Sets a new row's slots (`slot_count(cfg) * dim` floats) to their starting values.
void init_slots(const optimizer_config& cfg, std::span<float> slots);

/// Applies one gradient to `weights` and its `slots`. `step` is the row's update count: it is
/// incremented here, and Adam's bias correction uses it (lazy Adam: rows not updated do not
/// advance). Preconditions: sizes match, `grad` is finite (see all_finite), and `weights`,
/// `slots` and `grad` do not overlap.
void apply_gradient(const optimizer_config& cfg, std::span<float> weights, std::span<float> slots,
                    std::span<const float> grad, uint64_t& step);

} // namespace darcy::compute
