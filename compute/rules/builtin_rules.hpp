// The rules every node knows: TensorFlow's optimizers as the shards have always applied them
// (compute::apply_gradient, bit for bit), and two that keep less or clip: row-wise Adagrad,
// one accumulator a row (TorchRec's default fused optimizer), and Adagrad on a gradient whose
// L2 norm is clipped row by row.
#pragma once

#include <memory>

#include "compute/rules/update_rule.hpp"
#include "messages/optimizer_config.hpp"

namespace darcy::compute {

class rule_registry;

/// The rule of a built-in optimizer kind: "sgd", "adagrad", "momentum", "adam" or "ftrl",
/// taking optimizer_config's fields of that kind as parameters ("nesterov" as 0 or 1).
std::shared_ptr<const update_rule> builtin_rule(optimizer_kind kind);

/// `cfg`'s parameters as its kind's rule takes them, in its params() order.
std::vector<float> builtin_params(const optimizer_config& cfg);

/// Registers the five kinds' rules, "rowwise_adagrad" (learning_rate, initial_accumulator,
/// epsilon) and "clipped_adagrad" (learning_rate, initial_accumulator, clip_norm).
void add_builtin_rules(rule_registry& registry);

} // namespace darcy::compute
