#include "compute/nn/optimizers.hpp"

#include <cmath>
#include <cstring>

#include "compute/finite.hpp"

namespace darcy::compute::nn {

std::vector<float>& optimizer::slots_of(const parameter<float>& p) {
  auto [it, added] = slots_.try_emplace(&p);
  if (added) {
    it->second.resize(slot_count() * static_cast<size_t>(p.value.size()));
    init_slots(cfg_, it->second);
  }
  return it->second;
}

void optimizer::step(const parameter_list<float>& params) {
  for (auto* p : params) {
    if (is_moving_statistic(p->name)) {
      p->value -= p->grad;
      p->zero_grad();
      continue;
    }
    auto n = static_cast<size_t>(p->value.size());
    auto step = steps_;
    apply_gradient(cfg_, {p->value.data(), n}, slots_of(*p), {p->grad.data(), n}, step);
    p->zero_grad();
  }
  ++steps_;
}

optimizer_slots optimizer::export_slots(const parameter_list<float>& params) const {
  optimizer_slots out;
  out.steps = steps_;
  out.slots.resize(slot_count());
  std::vector<float> fresh;
  for (auto* p : params) {
    auto n = static_cast<size_t>(p->value.size());
    auto it = slots_.find(p);
    const float* data = nullptr;
    if (it != slots_.end()) {
      data = it->second.data();
    } else {
      fresh.assign(slot_count() * n, 0.0f);
      init_slots(cfg_, fresh);
      data = fresh.data();
    }
    for (size_t k = 0; k < slot_count(); ++k) {
      matrix m(p->value.rows(), p->value.cols());
      std::memcpy(m.data(), data + k * n, n * sizeof(float));
      out.slots[k].push_back(std::move(m));
    }
  }
  return out;
}

void optimizer::import_slots(const parameter_list<float>& params, optimizer_slots slots) {
  steps_ = slots.steps;
  slots_.clear();
  for (size_t i = 0; i < params.size(); ++i) {
    auto n = static_cast<size_t>(params[i]->value.size());
    auto& flat = slots_[params[i]];
    flat.resize(slot_count() * n);
    for (size_t k = 0; k < slot_count(); ++k)
      std::memcpy(flat.data() + k * n, slots.slots[k][i].data(), n * sizeof(float));
  }
}

template <class T>
T clip_by_global_norm(const parameter_list<T>& params, T max_norm) {
  T squared = 0;
  for (auto* p : params)
    if (!is_moving_statistic(p->name))
      squared += p->grad.squaredNorm();
  auto norm = std::sqrt(squared);
  if (norm > max_norm && norm > 0)
    for (auto* p : params)
      if (!is_moving_statistic(p->name))
        p->grad *= max_norm / norm;
  return norm;
}

template <class T>
bool grads_finite(const parameter_list<T>& params) {
  for (auto* p : params)
    if (!all_finite(p->grad))
      return false;
  return true;
}

template float clip_by_global_norm<float>(const parameter_list<float>&, float);
template double clip_by_global_norm<double>(const parameter_list<double>&, double);
template bool grads_finite<float>(const parameter_list<float>&);
template bool grads_finite<double>(const parameter_list<double>&);

} // namespace darcy::compute::nn
