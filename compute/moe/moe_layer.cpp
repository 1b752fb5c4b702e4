#include "compute/moe/moe_layer.hpp"

#include <algorithm>

#include "compute/parallel.hpp"

namespace darcy::compute::moe {

plain_error validate(const moe_config& cfg) {
  if (auto err = validate(cfg.gating, cfg.dim))
    return err;
  if (cfg.expert == expert_kind::ffn && cfg.hidden == 0)
    return {errc::invalid_config, "moe: an ffn expert needs hidden >= 1"};
  return {};
}

template <class T>
plain_expected<std::unique_ptr<moe_layer<T>>> moe_layer<T>::make(const moe_config& cfg) {
  if (auto err = validate(cfg))
    return err;
  return std::unique_ptr<moe_layer>{new moe_layer(cfg)};
}

template <class T>
moe_layer<T>::moe_layer(const moe_config& cfg) : cfg_(cfg), gate_(cfg.dim, cfg.gating) {
  experts_.reserve(cfg.gating.experts);
  for (uint32_t e = 0; e < cfg.gating.experts; ++e)
    experts_.emplace_back(cfg, e);
}

template <class T>
auto moe_layer<T>::forward(const matrix& x) -> matrix {
  plan_ = make_plan<T>(gate_.forward(x));
  in_ = dispatch<T>(x, plan_, threads_);
  hidden_.resize(plan_.slots(), experts_.empty() ? 0 : experts_.front().hidden_width());
  out_.resize(plan_.slots(), cfg_.dim);
  for_each_expert([&](uint32_t e, Eigen::Index first, Eigen::Index m) {
    auto hidden = hidden_.middleRows(first, m);
    auto out = out_.middleRows(first, m);
    experts_[e].forward(in_.middleRows(first, m), hidden, out);
  });
  return combine<T>(out_, plan_, threads_);
}

template <class T>
auto moe_layer<T>::backward(const matrix& dy) -> matrix {
  matrix dout, dgates;
  combine_backward<T>(dy, out_, plan_, dout, dgates, threads_);
  matrix din(plan_.slots(), cfg_.dim);
  for_each_expert([&](uint32_t e, Eigen::Index first, Eigen::Index m) {
    auto d = din.middleRows(first, m);
    experts_[e].backward(in_.middleRows(first, m), hidden_.middleRows(first, m),
                         dout.middleRows(first, m), d);
  });
  matrix dx = dispatch_backward<T>(din, plan_, threads_);
  dx += gate_.backward(dgates);
  return dx;
}

template <class T>
template <class Body>
void moe_layer<T>::for_each_expert(Body&& body) {
  auto bounds = balanced_expert_ranges(plan_, threads_);
  parallel_ranges(bounds.size() - 1, bounds.size() - 1, [&](size_t part, size_t, size_t) {
    for (auto e = bounds[part]; e < bounds[part + 1]; ++e)
      if (auto m = plan_.expert_batch(e); m > 0)
        body(e, static_cast<Eigen::Index>(plan_.offsets[e]), static_cast<Eigen::Index>(m));
  });
}

template <class T>
void moe_layer<T>::set_threads(size_t threads) {
  threads_ = std::max<size_t>(threads, 1);
  gate_.set_threads(threads_);
}

template <class T>
parameter_list<T> moe_layer<T>::parameters() {
  auto all = gate_.parameters();
  for (auto& e : experts_)
    for (auto* p : e.parameters())
      all.push_back(p);
  return all;
}

template <class T>
void moe_layer<T>::set_training(bool training) {
  gate_.set_training(training);
}

template class moe_layer<float>;
template class moe_layer<double>;

} // namespace darcy::compute::moe
