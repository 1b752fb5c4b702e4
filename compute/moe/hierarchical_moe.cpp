#include "compute/moe/hierarchical_moe.hpp"

namespace darcy::compute::moe {

plain_error validate(const gating_config& primary, const moe_config& group) {
  if (auto err = validate(group))
    return err;
  if (auto err = validate(primary, group.dim))
    return {err.code, "the primary gate, over the groups: " + err.context};
  return {};
}

template <class T>
plain_expected<std::unique_ptr<hierarchical_moe<T>>> hierarchical_moe<T>::make(
  const gating_config& primary, const moe_config& group) {
  if (auto err = validate(primary, group))
    return err;
  std::vector<std::unique_ptr<moe_layer<T>>> groups;
  for (uint32_t g = 0; g < primary.experts; ++g) {
    auto cfg = group;
    cfg.gating.seed = group.gating.seed + g;
    auto layer = moe_layer<T>::make(cfg);
    if (!layer)
      return layer.error();
    groups.push_back(std::move(*layer));
  }
  return std::make_unique<hierarchical_moe>(group.dim, primary, std::move(groups));
}

template <class T>
hierarchical_moe<T>::hierarchical_moe(uint32_t dim, const gating_config& primary,
                                      std::vector<std::unique_ptr<moe_layer<T>>> groups)
  : dim_(dim), primary_(dim, primary), groups_(std::move(groups)) {
}

template <class T>
auto hierarchical_moe<T>::forward(const matrix& x) -> matrix {
  plan_ = make_plan<T>(primary_.forward(x));
  matrix in = dispatch<T>(x, plan_);
  out_.resize(plan_.slots(), dim_);
  ran_.assign(groups_.size(), false);
  for (uint32_t g = 0; g < plan_.experts(); ++g)
    if (auto m = plan_.expert_batch(g); m > 0) {
      out_.middleRows(plan_.offsets[g], m) =
        groups_[g]->forward(in.middleRows(plan_.offsets[g], m));
      ran_[g] = true;
    }
  return combine<T>(out_, plan_);
}

template <class T>
auto hierarchical_moe<T>::backward(const matrix& dy) -> matrix {
  matrix dout, dgates;
  combine_backward<T>(dy, out_, plan_, dout, dgates);
  matrix din(plan_.slots(), dim_);
  for (uint32_t g = 0; g < plan_.experts(); ++g)
    if (auto m = plan_.expert_batch(g); m > 0)
      din.middleRows(plan_.offsets[g], m) =
        groups_[g]->backward(dout.middleRows(plan_.offsets[g], m));
  matrix dx = dispatch_backward<T>(din, plan_);
  dx += primary_.backward(dgates);
  return dx;
}

template <class T>
T hierarchical_moe<T>::aux_loss() const {
  auto total = primary_.aux_loss();
  for (size_t g = 0; g < groups_.size(); ++g)
    if (ran_[g])
      total += groups_[g]->aux_loss();
  return total;
}

template <class T>
parameter_list<T> hierarchical_moe<T>::parameters() {
  auto all = primary_.parameters();
  for (auto& g : groups_)
    for (auto* p : g->parameters())
      all.push_back(p);
  return all;
}

template <class T>
plain_error hierarchical_moe<T>::use_gpu() {
  for (auto& g : groups_)
    if (auto err = g->use_gpu()) {
      // No half-moved tree: a group that moved goes back to the CPU.
      for (auto& done : groups_)
        if (done->on_gpu())
          done->leave_gpu();
      return err;
    }
  return {};
}

template <class T>
void hierarchical_moe<T>::set_training(bool training) {
  primary_.set_training(training);
  for (auto& g : groups_)
    g->set_training(training);
}

template class hierarchical_moe<float>;
template class hierarchical_moe<double>;

} // namespace darcy::compute::moe
