// A two-level mixture of experts: a primary gate picks k_primary of a groups for each example,
// and inside each group a secondary MoE layer picks among its b experts, so that
// y = Σ_i G_primary(x)_i · Σ_j G_i(x)_j · E_{i,j}(x). The paper's hierarchical MoE.
//
//   auto h = moe::hierarchical_moe<float>::make(primary_cfg, group_cfg);  // 16 × 16 experts
//   auto y = (*h)->forward(x);
#pragma once

#include <memory>
#include <vector>

#include "compute/moe/moe_layer.hpp"

namespace darcy::compute::moe {

/// errc::invalid_config naming the level at fault: validate() of `group`, or of `primary` (over
/// the groups) at the groups' width.
plain_error validate(const gating_config& primary, const moe_config& group);

template <class T>
class hierarchical_moe final : public nn::layer<T> {
public:
  using matrix = matrix_t<T>;

  /// `primary` gates over primary.experts groups; each group is a moe_layer of `group`, the
  /// g-th seeded with group.gating.seed + g. Errors of validate(primary, group).
  static plain_expected<std::unique_ptr<hierarchical_moe>> make(const gating_config& primary,
                                                                const moe_config& group);

  /// The same from groups built by the caller (a test compares one group with a flat layer).
  hierarchical_moe(uint32_t dim, const gating_config& primary,
                   std::vector<std::unique_ptr<moe_layer<T>>> groups);

  matrix forward(const matrix& x) override;
  matrix backward(const matrix& dy) override;
  parameter_list<T> parameters() override;
  void set_training(bool training) override;

  /// Moves every group's training steps to the GPU (moe_layer::use_gpu); the primary gate
  /// stays on the CPU. On an error no group is left on the GPU.
  plain_error use_gpu();

  /// The step whose gate noise the next forward draws, in the primary gate and every group.
  void set_step(uint64_t step) {
    primary_.set_step(step);
    for (auto& g : groups_)
      g->set_step(step);
  }

  /// The primary gate's and every group's auxiliary losses of the last forward.
  T aux_loss() const;
  moe_layer<T>& group(uint32_t g) { return *groups_[g]; }
  gate<T>& primary() { return primary_; }
  const dispatch_plan& plan() const { return plan_; }

private:
  uint32_t dim_;
  gate<T> primary_;
  std::vector<std::unique_ptr<moe_layer<T>>> groups_;
  std::vector<bool> ran_;
  dispatch_plan plan_;
  matrix out_;
};

} // namespace darcy::compute::moe
