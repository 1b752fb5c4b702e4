#include "compute/moe/gpu_parameters.hpp"

#include <map>

namespace darcy::compute::moe {

namespace {

/// Calls f(parameter, stacked vector) for each of the layer's parameters in the GPU layer's
/// order: the gate's weights, each expert's (w1, then an FFN's b1, w2, b2), the noise weights.
template <class Parameters, class F>
void for_each_stacked(moe_layer<float>& layer, Parameters& p, F&& f) {
  auto gate = layer.gating().parameters();
  f(gate.front(), p.w_gate);
  for (uint32_t e = 0; e < layer.gating().config().experts; ++e) {
    auto ps = layer.expert(e).parameters();
    f(ps[0], p.w1);
    if (ps.size() == 4) {
      f(ps[1], p.b1);
      f(ps[2], p.w2);
      f(ps[3], p.b2);
    }
  }
  if (layer.gating().config().mask == mask_kind::noisy_top_k)
    f(gate.at(1), p.w_noise);
}

} // namespace

gpu::moe_shape gpu_shape(const moe_config& cfg) {
  gpu::moe_shape s;
  s.dim = static_cast<int>(cfg.dim);
  s.experts = static_cast<int>(cfg.gating.experts);
  s.k = static_cast<int>(cfg.gating.k);
  s.batchwise = cfg.gating.mask == mask_kind::batchwise;
  s.hidden = cfg.expert == expert_kind::ffn ? static_cast<int>(cfg.hidden) : 0;
  s.noisy = cfg.gating.mask == mask_kind::noisy_top_k;
  s.balance_weight = static_cast<float>(cfg.gating.balance_weight);
  s.balance_on_softmax = cfg.gating.balance_on == balance_input::softmax;
  s.importance_weight = static_cast<float>(cfg.gating.importance_weight);
  s.load_weight = static_cast<float>(cfg.gating.load_weight);
  return s;
}

gpu::moe_parameters gpu_parameters(moe_layer<float>& layer, bool gradients) {
  gpu::moe_parameters p;
  for_each_stacked(layer, p, [&](parameter<float>* param, std::vector<float>& to) {
    const auto& m = gradients ? param->grad : param->value;
    to.insert(to.end(), m.data(), m.data() + m.size());
  });
  return p;
}

void add_gpu_gradients(moe_layer<float>& layer, const gpu::moe_parameters& grads) {
  std::map<const std::vector<float>*, size_t> read; // how far each stacked vector was read
  for_each_stacked(layer, grads, [&](parameter<float>* param, const std::vector<float>& from) {
    auto& at = read[&from];
    param->grad += nn::matrix::Map(from.data() + at, param->grad.rows(), param->grad.cols());
    at += static_cast<size_t>(param->grad.size());
  });
}

} // namespace darcy::compute::moe
