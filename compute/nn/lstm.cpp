#include "compute/nn/lstm.hpp"

#include "compute/nn/init.hpp"

namespace darcy::compute::nn {

namespace {

template <class T>
T sigmoid(T x) {
  return T{1} / (T{1} + std::exp(-x));
}

} // namespace

template <class T>
lstm<T>::lstm(Eigen::Index in, Eigen::Index hidden, std::mt19937_64& rng)
  : w_("w", glorot_uniform<T>(in, 4 * hidden, rng)),
    u_("u", glorot_uniform<T>(hidden, 4 * hidden, rng)),
    b_("b", matrix::Zero(1, 4 * hidden)) {
  b_.value.block(0, hidden, 1, hidden).setOnes();
}

template <class T>
auto lstm<T>::forward(const sequence& xs, const lstm_state<T>& initial) -> sequence {
  auto h = hidden();
  auto rows = xs.empty() ? Eigen::Index{0} : xs.front().rows();
  xs_ = xs;
  hs_.assign(1, initial.h.size() == 0 ? matrix::Zero(rows, h) : initial.h);
  cs_.assign(1, initial.c.size() == 0 ? matrix::Zero(rows, h) : initial.c);
  gates_.clear();
  sequence out;
  out.reserve(xs.size());
  for (auto& x : xs) {
    matrix a = x * w_.value;
    a.noalias() += hs_.back() * u_.value;
    a.rowwise() += b_.value.row(0);
    a.leftCols(2 * h) = a.leftCols(2 * h).unaryExpr([](T v) { return sigmoid(v); });
    a.middleCols(2 * h, h) = a.middleCols(2 * h, h).array().tanh();
    a.rightCols(h) = a.rightCols(h).unaryExpr([](T v) { return sigmoid(v); });
    matrix c = a.middleCols(h, h).cwiseProduct(cs_.back()) +
               a.leftCols(h).cwiseProduct(a.middleCols(2 * h, h));
    matrix y = a.rightCols(h).cwiseProduct(matrix{c.array().tanh()});
    gates_.push_back(std::move(a));
    cs_.push_back(std::move(c));
    hs_.push_back(y);
    out.push_back(std::move(y));
  }
  return out;
}

template <class T>
auto lstm<T>::backward(const sequence& dhs) -> sequence {
  auto h = hidden();
  auto steps = gates_.size();
  sequence dxs(steps);
  matrix dh_next = matrix::Zero(hs_.front().rows(), h);
  matrix dc_next = dh_next;
  matrix da(dh_next.rows(), 4 * h);
  for (size_t t = steps; t-- > 0;) {
    auto& a = gates_[t];
    matrix dh = dhs[t] + dh_next;
    matrix tanh_c = cs_[t + 1].array().tanh();
    auto i = a.leftCols(h).array();
    auto f = a.middleCols(h, h).array();
    auto g = a.middleCols(2 * h, h).array();
    auto o = a.rightCols(h).array();
    matrix dc = dc_next.array() + dh.array() * o * (T{1} - tanh_c.array().square());
    da.leftCols(h) = dc.array() * g * i * (T{1} - i);
    da.middleCols(h, h) = dc.array() * cs_[t].array() * f * (T{1} - f);
    da.middleCols(2 * h, h) = dc.array() * i * (T{1} - g.square());
    da.rightCols(h) = dh.array() * tanh_c.array() * o * (T{1} - o);
    dc_next = dc.array() * f;
    w_.grad.noalias() += xs_[t].transpose() * da;
    u_.grad.noalias() += hs_[t].transpose() * da;
    b_.grad += da.colwise().sum();
    dxs[t] = da * w_.value.transpose();
    dh_next = da * u_.value.transpose();
  }
  return dxs;
}

template <class T>
lstm_state<T> lstm<T>::final_state() const {
  return {hs_.back(), cs_.back()};
}

template class lstm<float>;
template class lstm<double>;

} // namespace darcy::compute::nn
