#include "compute/wals.hpp"

#include <cmath>
#include <atomic>
#include <string>
#include <thread>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "compute/hash.hpp"
#include "messages/errc.hpp"

namespace darcy::compute {

namespace {

using vec = Eigen::VectorXf;
using mat = Eigen::MatrixXf;
using const_row = Eigen::Map<const Eigen::VectorXf>;
using row_map = Eigen::Map<Eigen::VectorXf>;
using const_square = Eigen::Map<const Eigen::MatrixXf>;

caf::error bad(const std::string& what) {
  return make_error(errc::invalid_argument, "wals: " + what);
}

/// A = sigma G + lambda I, the part every row of one half-step shares.
mat base_matrix(std::span<const float> gramian, const wals_params& p) {
  mat a = p.sigma * const_square(gramian.data(), p.dim, p.dim);
  a.diagonal().array() += p.lambda;
  return a;
}

/// Exact solve of one row: gathers its factors, forms the normal equations, Cholesky.
template <class Values>
void solve_exact(const mat& base, factor_view other, std::span<const uint32_t> cols,
                 const Values& values, const wals_params& p, mat& gathered, vec& scaled,
                 float* out) {
  auto n = static_cast<Eigen::Index>(cols.size());
  gathered.resize(n, p.dim);
  scaled.resize(n);
  vec b = vec::Zero(p.dim);
  for (Eigen::Index i = 0; i < n; ++i) {
    const_row v(other.row(cols[i]), p.dim);
    gathered.row(i) = v.transpose();
    float w = observed_weight(p, values[i]);
    scaled[i] = w - p.sigma;
    b += w * v;
  }
  mat a = base;
  if (n > 0)
    a.noalias() += gathered.transpose() * (scaled.asDiagonal() * gathered);
  Eigen::LLT<mat> llt(a);
  row_map x(out, p.dim);
  if (llt.info() == Eigen::Success)
    x = llt.solve(b);
  else
    x = a.ldlt().solve(b);
}

/// k steps of conjugate gradient on the same system, from x = out, without forming A.
void solve_cg(const mat& base, factor_view other, std::span<const uint32_t> cols,
              std::span<const float> values, const wals_params& p, vec& r, vec& dir, vec& ad,
              std::vector<float>& weights, float* out) {
  auto d = p.dim;
  row_map x(out, d);
  weights.resize(cols.size());
  // r = b - A x, with b = sum w v and the data part of A x = sum (w - sigma) (v . x) v.
  r.noalias() = -(base * x);
  for (size_t i = 0; i < cols.size(); ++i) {
    const_row v(other.row(cols[i]), d);
    float w = observed_weight(p, values[i]);
    weights[i] = w - p.sigma;
    r += (w - weights[i] * v.dot(x)) * v;
  }
  dir = r;
  float rr = r.squaredNorm();
  for (uint32_t step = 0; step < p.cg_steps && rr > 1e-20f; ++step) {
    ad.noalias() = base * dir;
    for (size_t i = 0; i < cols.size(); ++i) {
      const_row v(other.row(cols[i]), d);
      ad += (weights[i] * v.dot(dir)) * v;
    }
    float curvature = dir.dot(ad);
    if (!(curvature > 0))
      break;
    float step_size = rr / curvature;
    x += step_size * dir;
    r -= step_size * ad;
    float rr_next = r.squaredNorm();
    dir = r + (rr_next / rr) * dir;
    rr = rr_next;
  }
}

} // namespace

caf::error validate(const wals_params& p) {
  if (p.dim == 0)
    return bad("dim must be at least 1");
  if (!std::isfinite(p.alpha) || p.alpha < 0)
    return bad("alpha must be finite and >= 0, got " + std::to_string(p.alpha));
  if (!std::isfinite(p.sigma) || p.sigma < 0)
    return bad("sigma must be finite and >= 0, got " + std::to_string(p.sigma));
  if (!std::isfinite(p.lambda) || p.lambda < 0)
    return bad("lambda must be finite and >= 0, got " + std::to_string(p.lambda));
  if (p.sigma == 0 && p.lambda == 0)
    return bad("sigma and lambda are both 0; rows without entries would be singular");
  if (p.solver == wals_solver::cg && p.cg_steps == 0)
    return bad("cg needs at least 1 step");
  if (!std::isfinite(p.init_scale) || p.init_scale <= 0)
    return bad("init_scale must be finite and > 0");
  return {};
}

float observed_weight(const wals_params& p, float value) {
  float f = p.weight_fn == wals_weight_fn::log1p ? std::log1p(value) : value;
  return 1.0f + p.alpha * f;
}

void initial_row(const wals_params& p, wals_side side, uint64_t id, std::span<float> out) {
  auto base = mix64(p.seed, (id << 1) | static_cast<uint64_t>(side));
  float scale = 2.0f * p.init_scale / std::sqrt(static_cast<float>(out.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    auto bits = mix64(base, i) >> 40; // 24 random bits
    out[i] = (static_cast<float>(bits) * (1.0f / 16777216.0f) - 0.5f) * scale;
  }
}

void add_gramian(factor_view x, std::span<float> gramian) {
  if (x.rows == 0)
    return;
  Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> m(
    x.data, static_cast<Eigen::Index>(x.rows), x.dim);
  Eigen::Map<Eigen::MatrixXf> g(gramian.data(), x.dim, x.dim);
  g.noalias() += m.transpose() * m;
}

void solve_rows(const csr_matrix& a, uint64_t first, uint64_t last, factor_view other,
                std::span<const float> gramian, const wals_params& p, float* out) {
  mat base = base_matrix(gramian, p);
  mat gathered;
  vec scaled, r(p.dim), dir(p.dim), ad(p.dim);
  std::vector<float> weights;
  for (uint64_t row = first; row < last; ++row) {
    float* x = out + (row - first) * p.dim;
    if (p.solver == wals_solver::cholesky)
      solve_exact(base, other, a.row_indices(row), a.row_values(row), p, gathered, scaled, x);
    else
      solve_cg(base, other, a.row_indices(row), a.row_values(row), p, r, dir, ad, weights, x);
  }
}

std::vector<double> train_local(const csr_matrix& a, const csr_matrix& at, const wals_params& p,
                                uint32_t sweeps, uint32_t threads, std::vector<float>& u,
                                std::vector<float>& v,
                                const std::function<void(uint32_t sweep)>& on_sweep) {
  auto d = p.dim;
  auto init = [&](std::vector<float>& x, uint64_t n, wals_side side) {
    x.resize(n * d);
    for (uint64_t i = 0; i < n; ++i)
      initial_row(p, side, i, {x.data() + i * d, d});
  };
  init(u, a.rows, wals_side::rows);
  init(v, a.cols, wals_side::cols);
  auto half_step = [&](const csr_matrix& m, std::vector<float>& mine, const std::vector<float>& other) {
    std::vector<float> gram(size_t{d} * d, 0.0f);
    add_gramian({other.data(), m.cols, d}, gram);
    constexpr uint64_t chunk = 256;
    std::atomic<uint64_t> next{0};
    auto work = [&] {
      for (auto begin = next.fetch_add(chunk); begin < m.rows; begin = next.fetch_add(chunk)) {
        auto end = std::min(begin + chunk, m.rows);
        solve_rows(m, begin, end, {other.data(), m.cols, d}, gram, p, mine.data() + begin * d);
      }
    };
    std::vector<std::thread> pool;
    for (uint32_t t = 1; t < threads; ++t)
      pool.emplace_back(work);
    work();
    for (auto& t : pool)
      t.join();
  };
  std::vector<double> losses;
  for (uint32_t s = 0; s < sweeps; ++s) {
    half_step(a, u, v);
    half_step(at, v, u);
    losses.push_back(loss(a, {u.data(), a.rows, d}, {v.data(), a.cols, d}, p).total());
    if (on_sweep)
      on_sweep(s);
  }
  return losses;
}

double observed_loss(const csr_matrix& a, factor_view mine, factor_view other,
                     const wals_params& p) {
  double sum = 0;
  for (uint64_t row = 0; row < a.rows; ++row) {
    const_row u(mine.row(row), p.dim);
    auto cols = a.row_indices(row);
    auto values = a.row_values(row);
    for (size_t i = 0; i < cols.size(); ++i) {
      double x = u.dot(const_row(other.row(cols[i]), p.dim));
      double w = observed_weight(p, values[i]);
      sum += w * (1 - x) * (1 - x) - p.sigma * x * x;
    }
  }
  return sum;
}

double trace_product(std::span<const float> a, std::span<const float> b, uint32_t dim) {
  double sum = 0;
  for (size_t i = 0; i < size_t{dim} * dim; ++i)
    sum += static_cast<double>(a[i]) * b[i]; // symmetric: trace(AB) = sum a_ij b_ji = sum a_ij b_ij
  return sum;
}

double trace(std::span<const float> a, uint32_t dim) {
  double sum = 0;
  for (uint32_t i = 0; i < dim; ++i)
    sum += a[size_t{i} * dim + i];
  return sum;
}

wals_loss loss(const csr_matrix& a, factor_view u, factor_view v, const wals_params& p) {
  std::vector<float> gu(size_t{p.dim} * p.dim, 0.0f), gv(gu.size(), 0.0f);
  add_gramian(u, gu);
  add_gramian(v, gv);
  wals_loss result;
  result.observed = observed_loss(a, u, v, p);
  result.unobserved = p.sigma * trace_product(gu, gv, p.dim);
  result.regularization = p.lambda * (trace(gu, p.dim) + trace(gv, p.dim));
  return result;
}

caf::expected<std::vector<float>> project(factor_view other, std::span<const float> gramian,
                                          std::span<const uint32_t> ids,
                                          std::span<const float> values, const wals_params& p) {
  if (auto err = validate(p))
    return err;
  if (other.dim != p.dim || gramian.size() != size_t{p.dim} * p.dim)
    return make_error(errc::dimension_mismatch, "wals project: factors of dim " +
                                                  std::to_string(other.dim) + ", params dim " +
                                                  std::to_string(p.dim));
  if (ids.size() != values.size())
    return bad("project: " + std::to_string(ids.size()) + " ids but " +
               std::to_string(values.size()) + " values");
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= other.rows)
      return bad("project: id " + std::to_string(ids[i]) + " out of range (" +
                 std::to_string(other.rows) + " rows)");
    if (!std::isfinite(values[i]) || values[i] < 0)
      return bad("project: value " + std::to_string(values[i]) + " must be finite and >= 0");
  }
  std::vector<float> out(p.dim, 0.0f);
  mat gathered;
  vec scaled;
  solve_exact(base_matrix(gramian, p), other, ids, values, p, gathered, scaled, out.data());
  return out;
}

} // namespace darcy::compute
