// Between compute/moe's layer and gpu/'s: the GPU shape of a layer's configuration, and its
// parameters (or gradients) stacked the way the GPU layer takes them, so that both layers can
// run with the same weights.
#pragma once

#include "compute/moe/moe_layer.hpp"
#include "gpu/moe_layer.hpp"

namespace darcy::compute::moe {

/// The GPU layer of `cfg`, in training: its noise, its auxiliary losses, and a batchwise
/// mask (whose thresholds the GPU layer does not train).
gpu::moe_shape gpu_shape(const moe_config& cfg);

/// The layer's gate weights, every expert's parameters, stacked expert by expert, and a noisy
/// gate's noise weights (values, or gradients when `gradients`).
gpu::moe_parameters gpu_parameters(moe_layer<float>& layer, bool gradients = false);

/// Adds gradients stacked as gpu_parameters stacks them to the layer's parameters' gradients.
/// Precondition: every vector has its size (as gpu::moe_layer::gradients gives them).
void add_gpu_gradients(moe_layer<float>& layer, const gpu::moe_parameters& grads);

} // namespace darcy::compute::moe
