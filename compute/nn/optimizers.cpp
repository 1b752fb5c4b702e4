#include "compute/nn/optimizers.hpp"

#include <cmath>

namespace darcy::compute::nn {

namespace {

bool positive(double x) {
  return std::isfinite(x) && x > 0;
}

plain_error bad(const char* what) {
  return {errc::invalid_config, what};
}

} // namespace

plain_error validate(const adam_config& cfg) {
  if (!positive(cfg.learning_rate))
    return bad("adam: learning_rate must be finite and positive");
  if (!(cfg.beta1 >= 0 && cfg.beta1 < 1))
    return bad("adam: beta1 must be in [0, 1)");
  if (!(cfg.beta2 >= 0 && cfg.beta2 < 1))
    return bad("adam: beta2 must be in [0, 1)");
  if (!positive(cfg.epsilon))
    return bad("adam: epsilon must be finite and positive");
  return {};
}

plain_error validate(const adagrad_config& cfg) {
  if (!positive(cfg.learning_rate))
    return bad("adagrad: learning_rate must be finite and positive");
  if (!(std::isfinite(cfg.initial_accumulator) && cfg.initial_accumulator >= 0))
    return bad("adagrad: initial_accumulator must be non-negative");
  return {};
}

template <class T>
void adam<T>::step(const parameter_list<T>& params) {
  ++steps_;
  auto t = static_cast<double>(steps_);
  // TensorFlow's form: lr_t = lr · sqrt(1 − β2^t) / (1 − β1^t).
  auto lr = static_cast<T>(cfg_.learning_rate * std::sqrt(1 - std::pow(cfg_.beta2, t)) /
                           (1 - std::pow(cfg_.beta1, t)));
  auto b1 = static_cast<T>(cfg_.beta1);
  auto b2 = static_cast<T>(cfg_.beta2);
  auto eps = static_cast<T>(cfg_.epsilon);
  for (auto* p : params) {
    auto [it, added] = slots_.try_emplace(p);
    auto& s = it->second;
    if (added) {
      s.m = matrix_t<T>::Zero(p->value.rows(), p->value.cols());
      s.v = s.m;
    }
    s.m = b1 * s.m + (T{1} - b1) * p->grad;
    s.v = b2 * s.v + (T{1} - b2) * p->grad.cwiseAbs2();
    p->value.array() -= lr * s.m.array() / (s.v.array().sqrt() + eps);
    p->zero_grad();
  }
}

template <class T>
adam_slots<T> adam<T>::export_slots(const parameter_list<T>& params) const {
  adam_slots<T> out;
  out.steps = steps_;
  for (auto* p : params) {
    auto it = slots_.find(p);
    if (it == slots_.end()) {
      out.m.push_back(matrix_t<T>::Zero(p->value.rows(), p->value.cols()));
      out.v.push_back(out.m.back());
    } else {
      out.m.push_back(it->second.m);
      out.v.push_back(it->second.v);
    }
  }
  return out;
}

template <class T>
void adam<T>::import_slots(const parameter_list<T>& params, adam_slots<T> slots) {
  steps_ = slots.steps;
  slots_.clear();
  for (size_t i = 0; i < params.size(); ++i)
    slots_[params[i]] = {std::move(slots.m[i]), std::move(slots.v[i])};
}

template <class T>
void adagrad<T>::step(const parameter_list<T>& params) {
  auto lr = static_cast<T>(cfg_.learning_rate);
  for (auto* p : params) {
    auto [it, added] = accumulators_.try_emplace(p);
    auto& acc = it->second;
    if (added)
      acc = matrix_t<T>::Constant(p->value.rows(), p->value.cols(),
                                  static_cast<T>(cfg_.initial_accumulator));
    acc += p->grad.cwiseAbs2();
    p->value.array() -= lr * p->grad.array() / acc.array().sqrt();
    p->zero_grad();
  }
}

template <class T>
T clip_by_global_norm(const parameter_list<T>& params, T max_norm) {
  T squared = 0;
  for (auto* p : params)
    squared += p->grad.squaredNorm();
  auto norm = std::sqrt(squared);
  if (norm > max_norm && norm > 0)
    for (auto* p : params)
      p->grad *= max_norm / norm;
  return norm;
}

template <class T>
bool grads_finite(const parameter_list<T>& params) {
  for (auto* p : params)
    if (!p->grad.allFinite())
      return false;
  return true;
}

template class adam<float>;
template class adam<double>;
template class adagrad<float>;
template class adagrad<double>;
template float clip_by_global_norm<float>(const parameter_list<float>&, float);
template double clip_by_global_norm<double>(const parameter_list<double>&, double);
template bool grads_finite<float>(const parameter_list<float>&);
template bool grads_finite<double>(const parameter_list<double>&);

} // namespace darcy::compute::nn
