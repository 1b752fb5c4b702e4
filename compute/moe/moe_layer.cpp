#include "compute/moe/moe_layer.hpp"

#include "compute/nn/dense.hpp"
#include "compute/nn/relu.hpp"
#include "compute/nn/sequential.hpp"

namespace darcy::compute::moe {

plain_error validate(const moe_config& cfg) {
  if (auto err = validate(cfg.gating, cfg.dim))
    return err;
  if (cfg.expert == expert_kind::ffn && cfg.hidden == 0)
    return {errc::invalid_config, "moe: an ffn expert needs hidden >= 1"};
  return {};
}

template <class T>
std::unique_ptr<nn::layer<T>> make_expert(const moe_config& cfg, std::mt19937_64& rng) {
  if (cfg.expert == expert_kind::linear)
    return std::make_unique<nn::dense<T>>(cfg.dim, cfg.dim, rng, false);
  auto ffn = std::make_unique<nn::sequential<T>>();
  ffn->add(std::make_unique<nn::dense<T>>(cfg.dim, cfg.hidden, rng));
  ffn->add(std::make_unique<nn::relu<T>>());
  ffn->add(std::make_unique<nn::dense<T>>(cfg.hidden, cfg.dim, rng));
  return ffn;
}

template <class T>
plain_expected<std::unique_ptr<moe_layer<T>>> moe_layer<T>::make(const moe_config& cfg) {
  if (auto err = validate(cfg))
    return err;
  std::mt19937_64 rng{cfg.gating.seed};
  std::vector<std::unique_ptr<nn::layer<T>>> experts;
  for (uint32_t e = 0; e < cfg.gating.experts; ++e)
    experts.push_back(make_expert<T>(cfg, rng));
  return std::unique_ptr<moe_layer>{new moe_layer(cfg, std::move(experts))};
}

template <class T>
moe_layer<T>::moe_layer(const moe_config& cfg, std::vector<std::unique_ptr<nn::layer<T>>> experts)
  : cfg_(cfg), gate_(cfg.dim, cfg.gating), experts_(std::move(experts)) {}

template <class T>
auto moe_layer<T>::forward(const matrix& x) -> matrix {
  plan_ = make_plan<T>(gate_.forward(x));
  matrix in = dispatch<T>(x, plan_);
  out_.resize(plan_.slots(), cfg_.dim);
  for (uint32_t e = 0; e < plan_.experts(); ++e)
    if (auto m = plan_.expert_batch(e); m > 0)
      out_.middleRows(plan_.offsets[e], m) =
        experts_[e]->forward(in.middleRows(plan_.offsets[e], m));
  return combine<T>(out_, plan_);
}

template <class T>
auto moe_layer<T>::backward(const matrix& dy) -> matrix {
  matrix dout, dgates;
  combine_backward<T>(dy, out_, plan_, dout, dgates);
  matrix din(plan_.slots(), cfg_.dim);
  for (uint32_t e = 0; e < plan_.experts(); ++e)
    if (auto m = plan_.expert_batch(e); m > 0)
      din.middleRows(plan_.offsets[e], m) =
        experts_[e]->backward(dout.middleRows(plan_.offsets[e], m));
  matrix dx = dispatch_backward<T>(din, plan_);
  dx += gate_.backward(dgates);
  return dx;
}

template <class T>
parameter_list<T> moe_layer<T>::parameters() {
  auto all = gate_.parameters();
  for (auto& e : experts_)
    for (auto* p : e->parameters())
      all.push_back(p);
  return all;
}

template <class T>
void moe_layer<T>::set_training(bool training) {
  gate_.set_training(training);
  for (auto& e : experts_)
    e->set_training(training);
}

template class moe_layer<float>;
template class moe_layer<double>;
template std::unique_ptr<nn::layer<float>> make_expert<float>(const moe_config&, std::mt19937_64&);
template std::unique_ptr<nn::layer<double>> make_expert<double>(const moe_config&,
                                                                std::mt19937_64&);

} // namespace darcy::compute::moe
