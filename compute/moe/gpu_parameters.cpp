#include "compute/moe/gpu_parameters.hpp"

namespace darcy::compute::moe {

namespace {

void append(std::vector<float>& to, const nn::matrix& m) {
  to.insert(to.end(), m.data(), m.data() + m.size());
}

} // namespace

gpu::moe_shape gpu_shape(const moe_config& cfg) {
  gpu::moe_shape s;
  s.dim = static_cast<int>(cfg.dim);
  s.experts = static_cast<int>(cfg.gating.experts);
  s.k = static_cast<int>(cfg.gating.k);
  s.batchwise = cfg.gating.mask == mask_kind::batchwise;
  s.hidden = cfg.expert == expert_kind::ffn ? static_cast<int>(cfg.hidden) : 0;
  return s;
}

gpu::moe_parameters gpu_parameters(moe_layer<float>& layer, bool gradients) {
  gpu::moe_parameters p;
  auto pick = [&](parameter<float>* param) -> const nn::matrix& {
    return gradients ? param->grad : param->value;
  };
  append(p.w_gate, pick(layer.gating().parameters().front()));
  for (uint32_t e = 0; e < layer.gating().config().experts; ++e) {
    auto ps = layer.expert(e).parameters();
    append(p.w1, pick(ps[0]));
    if (ps.size() == 4) {
      append(p.b1, pick(ps[1]));
      append(p.w2, pick(ps[2]));
      append(p.b2, pick(ps[3]));
    }
  }
  return p;
}

} // namespace darcy::compute::moe
