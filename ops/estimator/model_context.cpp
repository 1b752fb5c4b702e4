#include "ops/estimator/model_context.hpp"

namespace darcy::ops::estimator {

std::string to_string(mode m) {
  switch (m) {
    case mode::train:
      return "train";
    case mode::eval:
      return "eval";
    case mode::predict:
      return "predict";
  }
  return "?";
}

parameter& variable_store::get(const std::string& name, const std::function<matrix()>& init) {
  if (auto it = by_name_.find(name); it != by_name_.end())
    return *it->second;
  auto& p = owned_[name];
  p = std::make_unique<parameter>(name, init());
  by_name_[name] = p.get();
  all_.push_back(p.get());
  return *p;
}

void variable_store::add(parameter* p) {
  auto [it, inserted] = by_name_.emplace(p->name, p);
  if (inserted)
    all_.push_back(p);
}

parameter* variable_store::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

tensor model_context::constant(matrix value) {
  nodes_.push_back({std::move(value), {}, {}});
  return {nodes_.size() - 1};
}

tensor model_context::record(matrix value, std::function<void(model_context&, tensor)> backward) {
  nodes_.push_back({std::move(value), {}, std::move(backward)});
  return {nodes_.size() - 1};
}

matrix& model_context::grad(tensor t) {
  auto& n = nodes_[t.id];
  if (n.grad.size() == 0)
    n.grad = matrix::Zero(n.value.rows(), n.value.cols());
  return n.grad;
}

void model_context::backpropagate(tensor t, matrix dvalue) {
  nodes_[t.id].grad = std::move(dvalue);
  for (size_t i = t.id + 1; i-- > 0;) {
    auto& n = nodes_[i];
    if (n.backward && n.grad.size() > 0)
      n.backward(*this, tensor{i});
  }
}

} // namespace darcy::ops::estimator
