// The two layer settings that the MoE benchmarks (darcy-bench moe, darcy-bench moe-gpu) share:
// the paper's (linear d × d experts, batchwise mask, k = 4) and a modern one (ReLU FFN experts
// d → 2d → d, top-2), each with the hidden width of the dense FFN of the same multiply-adds
// per token; and how a CPU layer's step is timed.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compute/moe/moe_layer.hpp"
#include "messages/moe/moe_config.hpp"

namespace darcy::apps {

struct moe_setting {
  std::string name;
  moe_config cfg;
  /// Hidden width of the dense FFN d → h → d with the MoE's multiply-adds per token.
  uint32_t dense_hidden = 0;
};

/// `name` is "seed" or "ffn" (see parse_moe_settings).
moe_setting make_moe_setting(const std::string& name, uint32_t dim, uint32_t experts);

/// The names of a comma-separated list, each "seed" or "ffn"; an empty vector and `error`
/// set for any other name.
std::vector<std::string> parse_moe_settings(const std::string& list, std::string& error);

/// The setting's CPU layer with a trained-looking gate: random weights instead of the all-zero
/// start, under which top-k would send every token to the same experts.
plain_expected<std::unique_ptr<compute::moe::moe_layer<float>>> make_bench_layer(
  const moe_setting& s, std::mt19937_64& rng);

/// The median time of `steps` forward-plus-backward steps of `layer`, after one untimed; the
/// gradients are cleared between steps, outside the timing.
double median_step_seconds(compute::nn::layer<float>& layer, const compute::nn::matrix& x,
                           const compute::nn::matrix& dy, uint32_t steps);

} // namespace darcy::apps
