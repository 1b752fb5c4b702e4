// The math of weighted alternating least squares (the seed's Algorithm 1) on implicit feedback:
// observed entries have target 1 and weight w = 1 + alpha * f(value); every other entry has
// target 0 and weight sigma, applied through the other side's Gramian. A half-step solves, for
// each row u of one side, (sigma G + lambda I + sum_obs (w - sigma) v v^T) u = sum_obs w v.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "compute/sparse_matrix.hpp"
#include "messages/errc.hpp"
#include "messages/wals/wals_values.hpp"

namespace darcy::compute {

/// errc::invalid_argument naming the field: dim 0, negative alpha, sigma or lambda, non-finite
/// values, cg with 0 steps, or sigma = lambda = 0 (the solve would be singular).
plain_error validate(const wals_params& p);

float observed_weight(const wals_params& p, float value);

/// Row-major factors: `rows` rows of `dim` floats. Row i is the factor of id i (of a slice).
struct factor_view {
  const float* data = nullptr;
  uint64_t rows = 0;
  uint32_t dim = 0;
  const float* row(uint64_t i) const { return data + i * dim; }
};

/// The initial row of `id` on `side`: a pure function of (params.seed, side, id), so every
/// shard layout and every restart starts from the same factors.
void initial_row(const wals_params& p, wals_side side, uint64_t id, std::span<float> out);

/// Adds X^T X of `x` to `gramian` (dim x dim, row-major).
void add_gramian(factor_view x, std::span<float> gramian);

/// Solves rows [first, last) of `a` against `other`, whose row j is the factor of a's column j,
/// with `gramian` = other^T other (all of the other side, not only the columns `a` uses). `out`
/// holds (last - first) x dim floats, row `first` first; cg starts from what it holds, cholesky
/// overwrites it. Deterministic. Returns the rows' observed_loss at the solution, computed while
/// their factors are still in cache. `weights` is empty, or observed_weights(a, p), computed
/// once by a caller that solves the same rows again.
double solve_rows(const csr_matrix& a, uint64_t first, uint64_t last, factor_view other,
                  std::span<const float> gramian, const wals_params& p, float* out,
                  std::span<const float> weights = {});

/// The rows of one side as factor shards hold them: row id lives in parts[id % count] at local
/// row id / count, count = parts.size(). Ids must be below 2^32; the parts must outlive this.
class interleaved_factors {
public:
  interleaved_factors(std::vector<const float*> parts, uint32_t dim);

  /// (id % count, id / count), without a division.
  std::pair<uint32_t, uint32_t> locate(uint64_t id) const {
    auto n = static_cast<uint32_t>(id);
    if (count_ == 1)
      return {0, n};
    // Lemire's fastdiv: exact for every 32-bit n and count >= 2.
    auto q = static_cast<uint32_t>((static_cast<unsigned __int128>(magic_) * n) >> 64);
    return {n - q * count_, q};
  }

  const float* row(uint64_t id) const {
    auto [part, local] = locate(id);
    return parts_[part] + uint64_t{local} * dim;
  }

  uint32_t dim;

private:
  std::vector<const float*> parts_;
  uint32_t count_;
  uint64_t magic_;
};

/// solve_rows against the other side read in place from its shards; `a`'s columns are ids.
double solve_rows(const csr_matrix& a, uint64_t first, uint64_t last,
                  const interleaved_factors& other, std::span<const float> gramian,
                  const wals_params& p, float* out, std::span<const float> weights = {});

/// observed_weight of every entry of `a`, in the order of a.values.
std::vector<float> observed_weights(const csr_matrix& a, const wals_params& p);
/// observed_weights into `w`, whose buffer is reused.
void observed_weights(const csr_matrix& a, const wals_params& p, std::vector<float>& w);

/// The plain single-process reference: `sweeps` alternations of solve_rows over all of `a`
/// (and its transpose `at`) on `threads` threads, starting from initial_row. Returns the loss
/// after each sweep; u and v end as the factors.
std::vector<double> train_local(const csr_matrix& a, const csr_matrix& at, const wals_params& p,
                                uint32_t sweeps, uint32_t threads, std::vector<float>& u,
                                std::vector<float>& v,
                                const std::function<void(uint32_t sweep)>& on_sweep = {});

/// sum over the entries of `a` of w (1 - x)^2 - sigma x^2, x = mine_r . other_c: the observed
/// part of the loss, net of what the Gramian term already counts for those entries.
double observed_loss(const csr_matrix& a, factor_view mine, factor_view other,
                     const wals_params& p);

/// trace(A B) of two symmetric dim x dim matrices: sum over all (i, j) of (u_i . v_j)^2 when
/// A = U^T U and B = V^T V.
double trace_product(std::span<const float> a, std::span<const float> b, uint32_t dim);

/// trace(A) of a dim x dim matrix: the squared Frobenius norm of X when A = X^T X.
double trace(std::span<const float> a, uint32_t dim);

struct wals_loss {
  double observed = 0;
  double unobserved = 0;
  double regularization = 0;
  double total() const { return observed + unobserved + regularization; }
};

/// The whole objective of `a` at (u, v), the unobserved part by the trace trick.
wals_loss loss(const csr_matrix& a, factor_view u, factor_view v, const wals_params& p);

/// Cold start: the row that one exact half-step gives an unseen row with these observed
/// columns (ids index `other`) and values, against fixed `other` and its `gramian`. Fails with
/// errc::invalid_argument for an id out of range, a negative or non-finite value, or sizes that
/// disagree.
plain_expected<std::vector<float>> project(factor_view other, std::span<const float> gramian,
                                           std::span<const uint32_t> ids,
                                           std::span<const float> values, const wals_params& p);

} // namespace darcy::compute
