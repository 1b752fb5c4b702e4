#include "compute/wals_math.hpp"

#include <array>
#include <atomic>
#include <cmath>
#include <numeric>
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

plain_error bad(const std::string& what) {
  return plain_error{errc::invalid_argument, "wals: " + what};
}

/// A = sigma G + lambda I, the part every row of one half-step shares.
mat base_matrix(std::span<const float> gramian, const wals_params& p) {
  mat a = p.sigma * const_square(gramian.data(), p.dim, p.dim);
  a.diagonal().array() += p.lambda;
  return a;
}

/// Rows with at least this many entries form their system explicitly (one pass over their
/// factors) instead of running matrix-free CG (a pass per step), whose passes only stay in cache
/// for shorter rows. In exact arithmetic both give the same CG iterates.
constexpr size_t explicit_threshold = 1024;

struct row_scratch {
  mat a;
  vec b, r, dir, ad, scale;
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> chunk;
  std::vector<float> weights;     // observed weights of the row's entries
  std::vector<float> excess;      // w - sigma per entry
  std::vector<float> projections; // per entry, scaled by excess
  std::vector<const float*> rows; // the other side's row of each entry
};

void prefetch_row(const float* row, uint32_t dim) {
  for (uint32_t at = 0; at < dim; at += 16)
    __builtin_prefetch(row + at);
}

/// Copies the other side's rows of a range's entries, in entry order, into one buffer, a batch
/// of entries at a time, in a loop that does nothing else. Rows read at random from a side of
/// gigabytes cost the least when many reads are in flight at once, which the solve's arithmetic
/// between them would prevent; the solve then reads them from cache. The first pass over each
/// row must take its rows from next(), one call per entry, in order. A batch ends at a row's end
/// unless a row alone is longer: a row of at most `batch` entries lies in one batch, so its
/// pointers stay valid until the next row's first call; a longer row's only until the next
/// call.
template <class Rows>
class row_gatherer {
public:
  /// Entries a batch (1 MiB of rows at dim 64).
  static constexpr uint64_t batch = 4096;
  /// Entries prefetched ahead of the one copied.
  static constexpr uint64_t distance = 32;
  static_assert(batch >= explicit_threshold, "a row that CG solves must lie in one batch");

  row_gatherer(const csr_matrix& a, uint64_t first, uint64_t last, const Rows& other)
    : offsets_(a.offsets.data()),
      indices_(a.indices.data()),
      row_(first),
      last_(last),
      at_(a.offsets[first]),
      end_(a.offsets[last]),
      other_(other) {}

  /// The other side's row of the next entry.
  const float* next() {
    if (taken_ == filled_)
      fill();
    return buffer_.data() + taken_++ * other_.dim;
  }

private:
  void fill() {
    auto limit = std::min(at_ + batch, end_);
    while (row_ < last_ && offsets_[row_ + 1] <= limit)
      ++row_;
    auto stop = row_ < last_ ? offsets_[row_] : end_;
    if (stop <= at_) // the current row alone is longer than a batch
      stop = limit;
    auto n = stop - at_;
    auto d = other_.dim;
    if (buffer_.size() < n * d)
      buffer_.resize(n * d);
    auto* ids = indices_ + at_;
    for (uint64_t i = 0; i < std::min(distance, n); ++i)
      prefetch_row(other_.row(ids[i]), d);
    for (uint64_t i = 0; i < n; ++i) {
      if (i + distance < n)
        prefetch_row(other_.row(ids[i + distance]), d);
      std::copy_n(other_.row(ids[i]), d, buffer_.data() + i * d);
    }
    at_ = stop;
    taken_ = 0;
    filled_ = n;
  }

  const uint64_t* offsets_;
  const uint32_t* indices_;
  /// The row that holds entry at_ (or the first row past it).
  uint64_t row_;
  uint64_t last_;
  /// The next entry to copy, and the range's end.
  uint64_t at_;
  uint64_t end_;
  const Rows& other_;
  std::vector<float> buffer_;
  uint64_t taken_ = 0;
  uint64_t filled_ = 0;
};

/// a = base + sum (w - sigma) v v^T and b = sum w v over the row's entries; returns sum w.
template <class Rows>
double form_system(const mat& base, const Rows& other, std::span<const uint32_t> cols,
                   std::span<const float> weights, const wals_params& p, row_scratch& s,
                   row_gatherer<Rows>* ahead) {
  constexpr size_t chunk = 256;
  auto d = p.dim;
  s.a = base;
  s.b.setZero(d);
  s.chunk.resize(chunk, d);
  s.scale.resize(chunk);
  double total = 0;
  for (size_t start = 0; start < cols.size(); start += chunk) {
    auto m = std::min(chunk, cols.size() - start);
    bool positive = true;
    for (size_t i = 0; i < m; ++i) {
      const_row v(ahead ? ahead->next() : other.row(cols[start + i]), d);
      float w = weights[start + i];
      total += w;
      s.b += w * v;
      s.scale[static_cast<Eigen::Index>(i)] = w - p.sigma;
      positive = positive && w - p.sigma >= 0;
      s.chunk.row(static_cast<Eigen::Index>(i)) = v.transpose();
    }
    auto rows = s.chunk.topRows(static_cast<Eigen::Index>(m));
    auto c = s.scale.head(static_cast<Eigen::Index>(m));
    if (positive) {
      rows.array().colwise() *= c.array().sqrt();
      s.a.selfadjointView<Eigen::Lower>().rankUpdate(rows.transpose());
    } else {
      s.a.noalias() += rows.transpose() * (c.asDiagonal() * rows);
    }
  }
  s.a.triangularView<Eigen::StrictlyUpper>() = s.a.transpose();
  return total;
}

/// k steps of CG on an explicit system, from x.
void cg_explicit(const mat& a, const vec& b, uint32_t steps, row_scratch& s, row_map& x) {
  s.r.noalias() = b - a * x;
  s.dir = s.r;
  float rr = s.r.squaredNorm();
  for (uint32_t step = 0; step < steps && rr > 1e-20f; ++step) {
    s.ad.noalias() = a * s.dir;
    float curvature = s.dir.dot(s.ad);
    if (!(curvature > 0))
      break;
    float step_size = rr / curvature;
    x += step_size * s.dir;
    s.r -= step_size * s.ad;
    float rr_next = s.r.squaredNorm();
    s.dir = s.r + (rr_next / rr) * s.dir;
    rr = rr_next;
  }
}

/// Solves one row through its explicit system; returns its observed loss at the solution,
/// sum w - 2 b.x + x^T (a - base) x.
template <class Rows>
double solve_explicit(const mat& base, const Rows& other, std::span<const uint32_t> cols,
                      std::span<const float> weights, const wals_params& p, row_scratch& s,
                      float* out, row_gatherer<Rows>* ahead = nullptr) {
  double total = form_system(base, other, cols, weights, p, s, ahead);
  row_map x(out, p.dim);
  if (p.solver == wals_solver::cholesky) {
    Eigen::LLT<mat> llt(s.a);
    if (llt.info() == Eigen::Success)
      x = llt.solve(s.b);
    else
      x = s.a.ldlt().solve(s.b);
  } else {
    cg_explicit(s.a, s.b, p.cg_steps, s, x);
  }
  s.ad.noalias() = (s.a - base) * x;
  return total - 2.0 * s.b.dot(x) + static_cast<double>(x.dot(s.ad));
}

/// k steps of matrix-free CG on the row's system, from x = out; returns its observed loss.
/// The other side's rows of `cols` come from `ahead`. `D` is the dimension when known at
/// compile time (the common ones), else Eigen::Dynamic: fixed-size vectors unroll the
/// per-entry dot products and updates.
template <int D, class Rows>
double solve_cg(const mat& base_matrix, std::span<const uint32_t> cols,
                std::span<const float> weights, const wals_params& p, row_scratch& s, float* out,
                row_gatherer<Rows>& ahead) {
  using fvec = Eigen::Matrix<float, D, 1>;
  using frow = Eigen::Map<const fvec>;
  const Eigen::Index d = p.dim;
  const auto n = cols.size();
  Eigen::Map<const Eigen::Matrix<float, D, D>> base(base_matrix.data(), d, d);
  Eigen::Map<fvec> x(out, d);
  s.excess.resize(n);
  s.projections.resize(n);
  s.rows.resize(n);
  // r = b - A x, with b = sum w v and the data part of A x = sum (w - sigma) (v . x) v.
  fvec r = -(base * x);
  for (size_t i = 0; i < n; ++i) {
    s.rows[i] = ahead.next();
    frow v(s.rows[i], d);
    float w = weights[i];
    s.excess[i] = w - p.sigma;
    r += (w - s.excess[i] * v.dot(x)) * v;
  }
  fvec dir = r;
  fvec ad(d);
  float rr = r.squaredNorm();
  for (uint32_t step = 0; step < p.cg_steps && rr > 1e-20f; ++step) {
    // The entries' projections first: independent dot products, then the updates.
    for (size_t i = 0; i < n; ++i)
      s.projections[i] = s.excess[i] * frow(s.rows[i], d).dot(dir);
    ad.noalias() = base * dir;
    for (size_t i = 0; i < n; ++i)
      ad += s.projections[i] * frow(s.rows[i], d);
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
  double loss = 0;
  for (size_t i = 0; i < n; ++i) { // the rows are still in cache
    double xv = frow(s.rows[i], d).dot(x);
    double w = weights[i];
    loss += w * (1 - xv) * (1 - xv) - p.sigma * xv * xv;
  }
  return loss;
}

template <class Rows>
using cg_kernel = double (*)(const mat&, std::span<const uint32_t>, std::span<const float>,
                             const wals_params&, row_scratch&, float*, row_gatherer<Rows>&);

template <class Rows>
cg_kernel<Rows> cg_kernel_for(uint32_t dim) {
  switch (dim) {
    case 16:
      return solve_cg<16, Rows>;
    case 32:
      return solve_cg<32, Rows>;
    case 64:
      return solve_cg<64, Rows>;
    case 128:
      return solve_cg<128, Rows>;
    default:
      return solve_cg<Eigen::Dynamic, Rows>;
  }
}

template <class Rows>
double solve_range(const csr_matrix& a, uint64_t first, uint64_t last, const Rows& other,
                   std::span<const float> gramian, const wals_params& p, float* out,
                   std::span<const float> weights) {
  mat base = base_matrix(gramian, p);
  row_scratch scratch;
  row_gatherer<Rows> ahead(a, first, last, other);
  auto cg = cg_kernel_for<Rows>(p.dim);
  double loss = 0;
  for (uint64_t row = first; row < last; ++row) {
    float* x = out + (row - first) * p.dim;
    auto cols = a.row_indices(row);
    std::span<const float> w;
    if (weights.empty()) {
      auto values = a.row_values(row);
      scratch.weights.resize(values.size());
      for (size_t i = 0; i < values.size(); ++i)
        scratch.weights[i] = observed_weight(p, values[i]);
      w = scratch.weights;
    } else {
      w = weights.subspan(a.offsets[row], cols.size());
    }
    if (p.solver == wals_solver::cholesky || cols.size() >= explicit_threshold)
      loss += solve_explicit(base, other, cols, w, p, scratch, x, &ahead);
    else
      loss += cg(base, cols, w, p, scratch, x, ahead);
  }
  return loss;
}

} // namespace

plain_error validate(const wals_params& p) {
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

double solve_rows(const csr_matrix& a, uint64_t first, uint64_t last, factor_view other,
                  std::span<const float> gramian, const wals_params& p, float* out,
                  std::span<const float> weights) {
  return solve_range(a, first, last, other, gramian, p, out, weights);
}

double solve_rows(const csr_matrix& a, uint64_t first, uint64_t last,
                  const interleaved_factors& other, std::span<const float> gramian,
                  const wals_params& p, float* out, std::span<const float> weights) {
  return solve_range(a, first, last, other, gramian, p, out, weights);
}

interleaved_factors::interleaved_factors(std::vector<const float*> parts, uint32_t dim)
  : dim(dim),
    parts_(std::move(parts)),
    count_(static_cast<uint32_t>(std::max<size_t>(parts_.size(), 1))),
    magic_(~uint64_t{0} / count_ + 1) {
}

std::vector<float> observed_weights(const csr_matrix& a, const wals_params& p) {
  std::vector<float> w;
  observed_weights(a, p, w);
  return w;
}

void observed_weights(const csr_matrix& a, const wals_params& p, std::vector<float>& w) {
  w.resize(a.values.size());
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = observed_weight(p, a.values[i]);
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
  std::vector<float> gram_u(size_t{d} * d), gram_v(gram_u.size());
  // Solves one side; returns its observed loss. `gram` is the other side's Gramian.
  auto weights_a = observed_weights(a, p), weights_at = observed_weights(at, p);
  auto half_step = [&](const csr_matrix& m, std::span<const float> weights,
                       std::vector<float>& mine, const std::vector<float>& other,
                       const std::vector<float>& gram) {
    constexpr uint64_t chunk = 256;
    std::atomic<uint64_t> next{0};
    std::vector<double> losses(std::max<uint32_t>(threads, 1), 0.0);
    auto work = [&](uint32_t t) {
      for (auto begin = next.fetch_add(chunk); begin < m.rows; begin = next.fetch_add(chunk)) {
        auto end = std::min(begin + chunk, m.rows);
        losses[t] += solve_rows(m, begin, end, {other.data(), m.cols, d}, gram, p,
                                mine.data() + begin * d, weights);
      }
    };
    std::vector<std::thread> pool;
    for (uint32_t t = 1; t < threads; ++t)
      pool.emplace_back(work, t);
    work(0);
    for (auto& t : pool)
      t.join();
    return std::accumulate(losses.begin(), losses.end(), 0.0);
  };
  auto gramian = [&](const std::vector<float>& x, uint64_t n, std::vector<float>& g) {
    std::fill(g.begin(), g.end(), 0.0f);
    add_gramian({x.data(), n, d}, g);
  };
  gramian(v, a.cols, gram_v);
  std::vector<double> losses;
  for (uint32_t s = 0; s < sweeps; ++s) {
    half_step(a, weights_a, u, v, gram_v);
    gramian(u, a.rows, gram_u);
    double observed = half_step(at, weights_at, v, u, gram_u);
    gramian(v, a.cols, gram_v);
    losses.push_back(observed + p.sigma * trace_product(gram_u, gram_v, d) +
                     p.lambda * (trace(gram_u, d) + trace(gram_v, d)));
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

plain_expected<std::vector<float>> project(factor_view other, std::span<const float> gramian,
                                           std::span<const uint32_t> ids,
                                           std::span<const float> values, const wals_params& p) {
  if (auto err = validate(p))
    return err;
  if (other.dim != p.dim || gramian.size() != size_t{p.dim} * p.dim)
    return plain_error{errc::dimension_mismatch, "wals project: factors of dim " +
                                                   std::to_string(other.dim) + ", params dim " +
                                                   std::to_string(p.dim)};
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
  auto exact = p;
  exact.solver = wals_solver::cholesky;
  row_scratch scratch;
  std::vector<float> weights(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    weights[i] = observed_weight(p, values[i]);
  solve_explicit(base_matrix(gramian, p), other, ids, weights, exact, scratch, out.data());
  return out;
}

} // namespace darcy::compute
