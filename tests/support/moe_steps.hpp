// Driving a MoE router from a test as its data-parallel replicas would, and the in-process twin
// the router must train like: the same layer, one Adam for the gate and one per expert, an
// expert stepping only when it took examples.
#pragma once

#include <utility>
#include <vector>

#include <caf/scoped_actor.hpp>

#include "compute/moe/moe_layer.hpp"
#include "compute/nn/optimizers.hpp"
#include "messages/moe/moe_interfaces.hpp"
#include "ops/moe_train.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::test {

using moe_matrix = compute::nn::matrix;

inline row_block moe_block(uint64_t step, const moe_matrix& m, Eigen::Index first,
                           Eigen::Index rows) {
  auto [values, span] = shared_floats::allocate(static_cast<size_t>(rows * m.cols()));
  Eigen::Map<moe_matrix>{span.data(), rows, m.cols()} = m.middleRows(first, rows);
  return row_block{step, static_cast<uint32_t>(rows), std::move(values)};
}

/// One phase (forward: x, backward: dy) of `step` from every replica, the rows of `all` split
/// evenly in replica order (ops::moe_phase); returns the answers stacked in the same order.
inline caf::expected<moe_matrix> router_phase(caf::scoped_actor& self,
                                              const moe_router_actor& router, bool forward,
                                              uint64_t step, const moe_matrix& all,
                                              uint32_t replicas) {
  auto per = all.rows() / replicas;
  std::vector<moe_matrix> blocks;
  for (uint32_t r = 0; r < replicas; ++r)
    blocks.push_back(all.middleRows(r * per, per));
  auto answers = ops::moe_phase(self, router, forward, step, blocks, patience);
  if (!answers)
    return std::move(answers.error());
  moe_matrix out(all.rows(), all.cols());
  for (uint32_t r = 0; r < replicas; ++r)
    out.middleRows(r * per, per) = (*answers)[r];
  return out;
}

/// The in-process layer the router and its expert actors must train like.
class moe_twin {
public:
  moe_twin(const moe_config& cfg, double learning_rate)
    : layer_(std::move(*compute::moe::moe_layer<float>::make(cfg))),
      gate_opt_(compute::adam_optimizer(learning_rate)),
      expert_opts_(cfg.gating.experts,
                   compute::nn::optimizer{compute::adam_optimizer(learning_rate)}) {}

  /// One training step: y for x, then dx for dy, then the optimizers.
  std::pair<moe_matrix, moe_matrix> step(const moe_matrix& x, const moe_matrix& dy) {
    moe_matrix y = layer_->forward(x);
    moe_matrix dx = layer_->backward(dy);
    gate_opt_.step(layer_->gating().parameters());
    for (uint32_t e = 0; e < expert_opts_.size(); ++e)
      if (layer_->plan().expert_batch(e) > 0)
        expert_opts_[e].step(layer_->expert(e).parameters());
    return {y, dx};
  }

private:
  std::unique_ptr<compute::moe::moe_layer<float>> layer_;
  compute::nn::optimizer gate_opt_;
  std::vector<compute::nn::optimizer> expert_opts_;
};

} // namespace darcy::test
