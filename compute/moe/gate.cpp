#include "compute/moe/gate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "compute/moe/masks.hpp"
#include "compute/nn/parallel_product.hpp"
#include "compute/nn/softmax_cross_entropy.hpp"

namespace darcy::compute::moe {

namespace {

plain_error bad(const std::string& what) {
  return {errc::invalid_config, what};
}

bool weight_ok(double w) {
  return std::isfinite(w) && w >= 0;
}

template <class T>
T softplus(T x) {
  return x > T{20} ? x : std::log1p(std::exp(x));
}

template <class T>
T sigmoid(T x) {
  return T{1} / (T{1} + std::exp(-x));
}

template <class T>
T normal_cdf(T z) {
  return T{0.5} * std::erfc(-z / std::sqrt(T{2}));
}

template <class T>
T normal_pdf(T z) {
  return std::exp(-z * z / 2) / std::sqrt(T{2} * T{M_PI});
}

/// dL/dlogits of a row-wise softmax s for dL/ds = ds.
template <class T>
matrix_t<T> softmax_backward(const matrix_t<T>& s, const matrix_t<T>& ds) {
  matrix_t<T> inner = s.cwiseProduct(ds).rowwise().sum();
  return s.cwiseProduct(ds - inner.replicate(1, s.cols()));
}

} // namespace

plain_error validate(const gating_config& cfg, uint32_t input_dim) {
  if (input_dim == 0)
    return bad("moe: the input width must be at least 1");
  if (cfg.experts == 0)
    return bad("moe: experts must be at least 1");
  if (cfg.k == 0 || cfg.k > cfg.experts)
    return bad("moe: k must be in [1, experts], got k = " + std::to_string(cfg.k) + " for " +
               std::to_string(cfg.experts) + " experts");
  if (!weight_ok(cfg.balance_weight) || !weight_ok(cfg.importance_weight) ||
      !weight_ok(cfg.load_weight))
    return bad("moe: balance_weight, importance_weight and load_weight must be finite and >= 0");
  if (cfg.load_weight > 0 && cfg.mask != mask_kind::noisy_top_k)
    return bad("moe: load_weight needs noisy_top_k gating");
  return {};
}

template <class T>
matrix_t<T> gate_noise(const gating_config& cfg, uint64_t step, Eigen::Index rows) {
  std::mt19937_64 rng{cfg.seed ^ (step * 0x9E3779B97F4A7C15ull)};
  std::normal_distribution<double> draw;
  matrix_t<T> eps(rows, cfg.experts);
  for (Eigen::Index i = 0; i < eps.size(); ++i)
    eps.data()[i] = static_cast<T>(draw(rng));
  return eps;
}

template <class T>
gate<T>::gate(uint32_t input_dim, const gating_config& cfg)
  : cfg_(cfg),
    w_gate_("w_gate", matrix::Zero(input_dim, cfg.experts)),
    w_noise_("w_noise", matrix::Zero(input_dim, cfg.experts)),
    thresholds_("thresholds", matrix::Zero(1, cfg.experts)) {
}

template <class T>
parameter_list<T> gate<T>::parameters() {
  parameter_list<T> all{&w_gate_};
  if (cfg_.mask == mask_kind::noisy_top_k)
    all.push_back(&w_noise_);
  if (cfg_.mask == mask_kind::batchwise)
    all.push_back(&thresholds_);
  return all;
}

template <class T>
auto gate<T>::forward(const matrix& x) -> matrix {
  auto b = static_cast<uint32_t>(x.rows());
  auto n = cfg_.experts;
  x_ = x;
  logits_.resize(b, n);
  nn::parallel_product<T>(x, false, w_gate_.value, false, logits_, false, threads_);
  h_ = logits_;
  auto noisy = cfg_.mask == mask_kind::noisy_top_k && training_;
  if (noisy) {
    noise_raw_.resize(b, n);
    nn::parallel_product<T>(x, false, w_noise_.value, false, noise_raw_, false, threads_);
    noise_std_ = noise_raw_.unaryExpr([](T v) { return softplus(v); });
    eps_ = gate_noise<T>(cfg_, step_, b);
    h_ += eps_.cwiseProduct(noise_std_);
  }
  softmax_ = nn::softmax_rows<T>(logits_);
  aux_loss_ = 0;
  threshold_loss_ = 0;
  if (cfg_.mask == mask_kind::batchwise) {
    if (training_) {
      batchwise_ = batchwise_mask<T>(softmax_, batchwise_m(cfg_.k, b, n));
      mask_ = batchwise_;
      auto thresholded = threshold_mask<T>(softmax_, thresholds_.value);
      agreement_ = mask_agreement<T>(thresholded, batchwise_);
      threshold_loss_ = batchwise_threshold_loss<T>(softmax_, thresholds_.value, batchwise_).value;
    } else {
      mask_ = threshold_mask<T>(softmax_, thresholds_.value);
    }
  } else {
    mask_ = top_k_mask<T>(h_, cfg_.k);
  }
  // G = M ⊙ e^{H − max} / Σ M ⊙ e^{H − max}; rows with an empty mask stay 0.
  gates_ = matrix::Zero(b, n);
  for (Eigen::Index r = 0; r < h_.rows(); ++r) {
    T max = -std::numeric_limits<T>::infinity();
    for (Eigen::Index c = 0; c < h_.cols(); ++c)
      if (mask_(r, c) > 0)
        max = std::max(max, h_(r, c));
    T sum = 0;
    for (Eigen::Index c = 0; c < h_.cols(); ++c)
      if (mask_(r, c) > 0)
        sum += gates_(r, c) = std::exp(h_(r, c) - max);
    if (sum > 0)
      gates_.row(r) /= sum;
  }
  if (cfg_.balance_weight > 0)
    aux_loss_ += static_cast<T>(cfg_.balance_weight) * balance_loss<T>(balanced()).value;
  if (cfg_.importance_weight > 0)
    aux_loss_ +=
      static_cast<T>(cfg_.importance_weight) * cv_squared<T>(gates_.colwise().sum()).value;
  load_excluding_.clear();
  if (noisy && cfg_.load_weight > 0)
    aux_loss_ += load_loss();
  return gates_;
}

// The smooth load estimate: P(x, i) = Φ((logit_i − kth_excluding(H(x), k, i)) / std_i), the
// chance that expert i stays in the top k when only its own noise is drawn again. Keeps what
// the gradient needs, and returns w · CV²(Σ_x P).
template <class T>
T gate<T>::load_loss() {
  auto b = h_.rows();
  auto n = h_.cols();
  auto k = cfg_.k;
  load_excluding_.clear();
  if (k >= n)
    return 0; // every expert is in every top k: P = 1, no gradient.
  load_z_.resize(b, n);
  load_excluding_.resize(static_cast<size_t>(b * n));
  matrix load = matrix::Zero(1, n);
  std::vector<Eigen::Index> order(static_cast<size_t>(n));
  for (Eigen::Index r = 0; r < b; ++r) {
    std::iota(order.begin(), order.end(), Eigen::Index{0});
    std::partial_sort(order.begin(), order.begin() + k + 1, order.end(),
                      [&](Eigen::Index a, Eigen::Index c) {
                        return h_(r, a) > h_(r, c) || (h_(r, a) == h_(r, c) && a < c);
                      });
    for (Eigen::Index c = 0; c < n; ++c) {
      // Excluding c: the (k+1)-th largest when c is among the top k, else the k-th.
      auto j = mask_(r, c) > 0 ? order[k] : order[k - 1];
      load_excluding_[r * n + c] = j;
      load_z_(r, c) = (logits_(r, c) - h_(r, j)) / noise_std_(r, c);
      load(0, c) += normal_cdf(load_z_(r, c));
    }
  }
  auto cv = cv_squared<T>(load);
  load_grad_ = static_cast<T>(cfg_.load_weight) * cv.grad;
  return static_cast<T>(cfg_.load_weight) * cv.value;
}

// Adds the load loss's gradient w.r.t. the logits and the noise std; the k-th value it
// compares with is H at another expert, logits_j + ε_j · std_j.
template <class T>
void gate<T>::add_load_grad(matrix& dlogits, matrix& dstd) const {
  if (load_excluding_.empty())
    return;
  auto n = h_.cols();
  for (Eigen::Index r = 0; r < h_.rows(); ++r)
    for (Eigen::Index c = 0; c < n; ++c) {
      auto z = load_z_(r, c);
      auto s = noise_std_(r, c);
      auto dz = load_grad_(0, c) * normal_pdf(z);
      auto j = load_excluding_[r * n + c];
      dlogits(r, c) += dz / s;
      dstd(r, c) -= dz * z / s;
      dlogits(r, j) -= dz / s;
      dstd(r, j) -= dz / s * eps_(r, j);
    }
}

template <class T>
auto gate<T>::backward(const matrix& dgates) -> matrix {
  auto b = h_.rows();
  auto n = h_.cols();
  matrix dg = dgates;
  if (cfg_.importance_weight > 0) {
    auto cv = cv_squared<T>(gates_.colwise().sum());
    dg += (static_cast<T>(cfg_.importance_weight) * cv.grad).replicate(b, 1);
  }
  auto balance = static_cast<T>(cfg_.balance_weight);
  if (balance > 0 && cfg_.balance_on == balance_input::gates)
    dg += balance * balance_loss<T>(gates_).grad;
  // Through the masked softmax: dH_i = M_i · G_i · (dG_i − Σ_j G_j dG_j).
  matrix inner = gates_.cwiseProduct(dg).rowwise().sum();
  matrix dh = gates_.cwiseProduct(dg - inner.replicate(1, n));
  matrix dlogits = dh;
  if (balance > 0 && cfg_.balance_on == balance_input::softmax)
    dlogits += softmax_backward<T>(softmax_, balance * balance_loss<T>(softmax_).grad);
  matrix dx;
  if (cfg_.mask == mask_kind::noisy_top_k && training_) {
    matrix dstd = dh.cwiseProduct(eps_);
    add_load_grad(dlogits, dstd);
    matrix draw = dstd.cwiseProduct(noise_raw_.unaryExpr([](T v) { return sigmoid(v); }));
    nn::parallel_product<T>(x_, true, draw, false, w_noise_.grad, true, threads_);
    dx.resize(b, x_.cols());
    nn::parallel_product<T>(draw, false, w_noise_.value, true, dx, false, threads_);
  } else {
    dx = matrix::Zero(b, x_.cols());
  }
  nn::parallel_product<T>(x_, true, dlogits, false, w_gate_.grad, true, threads_);
  nn::parallel_product<T>(dlogits, false, w_gate_.value, true, dx, true, threads_);
  add_threshold_grad();
  return dx;
}

template <class T>
void gate<T>::add_threshold_grad() {
  if (cfg_.mask == mask_kind::batchwise && training_)
    thresholds_.grad += batchwise_threshold_loss<T>(softmax_, thresholds_.value, batchwise_).grad;
}

template matrix_t<float> gate_noise<float>(const gating_config&, uint64_t, Eigen::Index);
template matrix_t<double> gate_noise<double>(const gating_config&, uint64_t, Eigen::Index);
template class gate<float>;
template class gate<double>;

} // namespace darcy::compute::moe
