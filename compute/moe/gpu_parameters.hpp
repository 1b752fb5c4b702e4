// Between compute/moe's layer and gpu/'s: the GPU shape of a layer's configuration, and its
// parameters (or gradients) stacked the way the GPU layer takes them, so that both layers can
// run with the same weights.
#pragma once

#include "compute/moe/moe_layer.hpp"
#include "gpu/moe_layer.hpp"

namespace darcy::compute::moe {

/// The GPU layer of `cfg`; noise and auxiliary losses have no GPU version and are dropped.
gpu::moe_shape gpu_shape(const moe_config& cfg);

/// The layer's gate weights and every expert's parameters (values, or gradients when
/// `gradients`), stacked expert by expert.
gpu::moe_parameters gpu_parameters(moe_layer<float>& layer, bool gradients = false);

} // namespace darcy::compute::moe
