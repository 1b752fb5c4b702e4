#include "compute/moe/moe_layer.hpp"

#include <algorithm>
#include <type_traits>

#include "compute/moe/gpu_parameters.hpp"
#include "compute/parallel.hpp"
#include "gpu/moe_layer.hpp"

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
moe_layer<T>::~moe_layer() = default;

template <class T>
plain_error moe_layer<T>::use_gpu() {
  if constexpr (!std::is_same_v<T, float>) {
    return {errc::unavailable, "moe: only float layers run on a GPU"};
  } else {
    std::string error;
    auto device = gpu::moe_layer::make(gpu_shape(cfg_), error);
    if (!device)
      return {errc::unavailable, error};
    gpu_ = std::move(device);
    gpu_error_.clear();
    return {};
  }
}

template <class T>
void moe_layer<T>::fail_gpu_after(int calls) {
  if (gpu_)
    gpu_->fail_after(calls);
}

template <class T>
void moe_layer<T>::drop_gpu(std::string reason) {
  gpu_.reset();
  gpu_error_ = std::move(reason);
  last_on_gpu_ = false;
}

template <class T>
bool moe_layer<T>::gpu_forward(const matrix& x, matrix& y) {
  if constexpr (std::is_same_v<T, float>) {
    auto rows = static_cast<int>(x.rows());
    matrix noise;
    if (cfg_.gating.mask == mask_kind::noisy_top_k)
      noise = gate_noise<T>(cfg_.gating, step_, x.rows());
    y.resize(x.rows(), cfg_.dim);
    auto error = gpu_->set_parameters(gpu_parameters(*this));
    if (error.empty())
      error = gpu_->forward(x.data(), rows, y.data(), noise.size() > 0 ? noise.data() : nullptr);
    if (!error.empty()) {
      drop_gpu(error);
      return false;
    }
    // The thresholds learn from the batchwise mask, computed here from the same logits.
    if (cfg_.gating.mask == mask_kind::batchwise)
      gate_.forward(x);
    gpu_x_ = x;
    gpu_aux_loss_ = gpu_->aux_loss();
    plan_ = dispatch_plan{};
    plan_.offsets.assign(1, 0);
    for (int batch : gpu_->expert_batches())
      plan_.offsets.push_back(plan_.offsets.back() + static_cast<uint32_t>(batch));
    plan_.batch = static_cast<uint32_t>(rows);
    return true;
  } else {
    return false;
  }
}

template <class T>
bool moe_layer<T>::gpu_backward(const matrix& dy, matrix& dx) {
  if constexpr (std::is_same_v<T, float>) {
    dx.resize(dy.rows(), cfg_.dim);
    gpu::moe_parameters grads;
    auto error = gpu_->backward(dy.data(), dx.data());
    if (error.empty())
      error = gpu_->gradients(grads);
    if (!error.empty()) {
      drop_gpu(error);
      return false;
    }
    add_gpu_gradients(*this, grads);
    gate_.add_threshold_grad();
    return true;
  } else {
    return false;
  }
}

template <class T>
auto moe_layer<T>::forward(const matrix& x) -> matrix {
  last_on_gpu_ = false;
  if (gpu_ && training_) {
    matrix y;
    if (gpu_forward(x, y)) {
      last_on_gpu_ = true;
      return y;
    }
  }
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
  if (last_on_gpu_) {
    matrix dx;
    if (gpu_backward(dy, dx))
      return dx;
    forward(gpu_x_); // the device failed: this step again, on the CPU
  }
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
  training_ = training;
  gate_.set_training(training);
}

template class moe_layer<float>;
template class moe_layer<double>;

} // namespace darcy::compute::moe
