#include "compute/wals_math.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include <gtest/gtest.h>
#include <Eigen/Dense>

#include "compute/synthetic_matrix.hpp"
#include "messages/errc.hpp"

namespace darcy::compute {
namespace {

/// A small matrix with some empty rows and columns, and its dense form.
csr_matrix small_matrix(uint64_t rows, uint64_t cols, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::vector<triple> ts;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c)
      if (r % 5 != 4 && rng() % 3 == 0)
        ts.push_back({r, c, static_cast<float>(rng() % 20)});
  return *from_triples(rows, cols, ts);
}

std::vector<float> random_factors(uint64_t n, uint32_t d, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::normal_distribution<float> normal{0.0f, 0.3f};
  std::vector<float> x(n * d);
  for (auto& v : x)
    v = normal(rng);
  return x;
}

/// Row r's exact solution by the definition: every entry weighted, in double precision.
Eigen::VectorXd dense_solution(const csr_matrix& a, uint64_t r, const std::vector<float>& v,
                               const wals_params& p) {
  auto d = p.dim;
  Eigen::MatrixXd lhs = Eigen::MatrixXd::Identity(d, d) * p.lambda;
  Eigen::VectorXd rhs = Eigen::VectorXd::Zero(d);
  for (uint64_t c = 0; c < a.cols; ++c) {
    Eigen::VectorXd vc(d);
    for (uint32_t k = 0; k < d; ++k)
      vc[k] = v[c * d + k];
    double weight = p.sigma, target = 0;
    auto cols = a.row_indices(r);
    for (size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == c) {
        weight = observed_weight(p, a.row_values(r)[i]);
        target = 1;
      }
    lhs += weight * vc * vc.transpose();
    rhs += weight * target * vc;
  }
  return lhs.fullPivLu().solve(rhs);
}

std::vector<float> gramian_of(const std::vector<float>& x, uint64_t n, uint32_t d) {
  std::vector<float> g(size_t{d} * d, 0.0f);
  add_gramian({x.data(), n, d}, g);
  return g;
}

/// A small matrix with random factors of the other side and their Gramian, at dim 64.
struct problem {
  wals_params p;
  csr_matrix a;
  std::vector<float> v, g;
};

problem problem_of(uint64_t rows, uint64_t cols, uint64_t seed) {
  problem x;
  x.p.dim = 64;
  x.a = small_matrix(rows, cols, seed);
  x.v = random_factors(cols, x.p.dim, seed + 1);
  x.g = gramian_of(x.v, cols, x.p.dim);
  return x;
}

struct solver_case {
  const char* what;
  wals_solver solver;
  uint32_t dim;
  uint32_t cg_steps;
  wals_weight_fn fn;
  double tolerance; // relative to max(1, |exact|)
};

TEST(solve_rows, MatchesDenseClosedForm) {
  // CG rows of dim 16, 32, 64 and 128 have fixed-size kernels; 6 and 40 take the general one.
  solver_case cases[] = {
    {"cholesky identity", wals_solver::cholesky, 6, 1, wals_weight_fn::identity, 1e-4},
    {"cholesky log1p", wals_solver::cholesky, 6, 1, wals_weight_fn::log1p, 1e-4},
    {"cg dim 6", wals_solver::cg, 6, 40, wals_weight_fn::log1p, 1e-3},
    {"cg dim 16", wals_solver::cg, 16, 32, wals_weight_fn::log1p, 2e-3},
    {"cg dim 32", wals_solver::cg, 32, 64, wals_weight_fn::log1p, 2e-3},
    {"cg dim 40", wals_solver::cg, 40, 80, wals_weight_fn::log1p, 2e-3},
    {"cg dim 64", wals_solver::cg, 64, 128, wals_weight_fn::identity, 2e-3},
    {"cg dim 128", wals_solver::cg, 128, 256, wals_weight_fn::log1p, 2e-3},
  };
  for (auto& c : cases) {
    wals_params p;
    p.dim = c.dim;
    p.alpha = 0.5f;
    p.sigma = 0.3f;
    p.lambda = 0.2f;
    p.solver = c.solver;
    p.cg_steps = c.cg_steps;
    p.weight_fn = c.fn;
    auto a = small_matrix(12, 30, 7);
    auto v = random_factors(a.cols, p.dim, 3);
    auto g = gramian_of(v, a.cols, p.dim);
    std::vector<float> u(a.rows * p.dim, 0.0f);
    solve_rows(a, 0, a.rows, {v.data(), a.cols, p.dim}, g, p, u.data());
    for (uint64_t r = 0; r < a.rows; ++r) {
      auto want = dense_solution(a, r, v, p);
      for (uint32_t k = 0; k < p.dim; ++k)
        ASSERT_NEAR(u[r * p.dim + k], want[k], c.tolerance * std::max(1.0, std::abs(want[k])))
          << c.what << " row " << r << " coordinate " << k;
    }
  }
}

TEST(solve_rows, SplitsAndPrecomputedWeightsGiveTheSameBits) {
  // Workers solve blocks of rows with weights computed once; the plain loop solves other
  // ranges. Neither may change a single bit of any row.
  auto [p, a, v, g] = problem_of(40, 50, 23);
  factor_view other{v.data(), a.cols, p.dim};
  std::vector<float> whole(a.rows * p.dim, 0.0f), split(whole.size(), 0.0f);
  double whole_loss = solve_rows(a, 0, a.rows, other, g, p, whole.data());
  auto weights = observed_weights(a, p);
  double split_loss = solve_rows(a, 0, 13, other, g, p, split.data(), weights) +
                      solve_rows(a, 13, a.rows, other, g, p, split.data() + 13 * p.dim, weights);
  EXPECT_EQ(whole, split);
  EXPECT_NEAR(whole_loss, split_loss, 1e-9 * std::abs(whole_loss));
}

TEST(interleaved_factors, LocatesEveryIdLikeDivisionAndRemainder) {
  std::vector<uint64_t> ids = {
    0, 1, 2, 3, 63, 64, 65, 999'999, 1u << 31, (1ull << 32) - 2, (1ull << 32) - 1};
  for (uint32_t count : {1u, 2u, 3u, 7u, 64u, 1000u, 65537u}) {
    interleaved_factors x(std::vector<const float*>(count, nullptr), 1);
    for (auto id : ids) {
      auto [part, local] = x.locate(id);
      EXPECT_EQ(part, id % count) << id << " of " << count;
      EXPECT_EQ(local, id / count) << id << " of " << count;
    }
  }
}

TEST(solve_rows, InterleavedFactorsGiveTheSameBitsAsOneBuffer) {
  // Workers in the shards' process read the other side in place, split by id % count.
  auto [p, a, v, g] = problem_of(20, 31, 37);
  for (auto solver : {wals_solver::cg, wals_solver::cholesky}) {
    p.solver = solver;
    std::vector<float> want(a.rows * p.dim, 0.0f);
    double want_loss = solve_rows(a, 0, a.rows, {v.data(), a.cols, p.dim}, g, p, want.data());
    for (uint32_t count : {1u, 2u, 3u, 7u}) {
      std::vector<std::vector<float>> parts(count);
      for (uint64_t id = 0; id < a.cols; ++id)
        parts[id % count].insert(parts[id % count].end(), v.begin() + id * p.dim,
                                 v.begin() + (id + 1) * p.dim);
      std::vector<const float*> pointers;
      for (auto& part : parts)
        pointers.push_back(part.data());
      std::vector<float> got(want.size(), 0.0f);
      double got_loss =
        solve_rows(a, 0, a.rows, interleaved_factors{pointers, p.dim}, g, p, got.data());
      EXPECT_EQ(got, want) << to_string(solver) << ", " << count << " parts";
      EXPECT_EQ(got_loss, want_loss) << to_string(solver) << ", " << count << " parts";
    }
  }
}

/// Dim 6, and CG steps enough to reach the closed form.
wals_params closed_form_params(wals_solver solver) {
  wals_params p;
  p.dim = 6;
  p.solver = solver;
  p.cg_steps = 30;
  return p;
}

TEST(solve_rows, LongRowsTakeTheExplicitPathWithTheSameAnswerAndLoss) {
  // Rows of 1500 entries (past the explicit threshold) next to short ones; CG with enough
  // steps and Cholesky both reach the closed form, and the returned loss is observed_loss.
  std::vector<triple> ts;
  for (uint32_t c = 0; c < 1500; ++c) {
    ts.push_back({0, c, static_cast<float>(c % 7)});
    if (c % 3 == 0)
      ts.push_back({1, c, 2.0f});
  }
  ts.push_back({2, 5, 1.0f});
  auto a = *from_triples(3, 1600, ts);
  for (auto solver : {wals_solver::cg, wals_solver::cholesky}) {
    auto p = closed_form_params(solver);
    auto v = random_factors(a.cols, p.dim, 13);
    auto g = gramian_of(v, a.cols, p.dim);
    std::vector<float> u(a.rows * p.dim, 0.0f);
    double returned = solve_rows(a, 0, a.rows, {v.data(), a.cols, p.dim}, g, p, u.data());
    for (uint64_t r = 0; r < a.rows; ++r) {
      auto want = dense_solution(a, r, v, p);
      for (uint32_t k = 0; k < p.dim; ++k)
        EXPECT_NEAR(u[r * p.dim + k], want[k], 2e-3 * std::max(1.0, std::abs(want[k])))
          << to_string(solver) << " row " << r;
    }
    double direct = observed_loss(a, {u.data(), a.rows, p.dim}, {v.data(), a.cols, p.dim}, p);
    EXPECT_NEAR(returned, direct, 1e-3 * std::abs(direct)) << to_string(solver);
  }
}

TEST(solve_rows, RowsAcrossGatherBatchesGiveTheBitsOfEachRowAloneAndTheClosedForm) {
  // The other side's rows are gathered a batch of 4096 entries at a time: rows longer than a
  // batch (split across batches), short rows that straddle batch ends, and empty rows.
  struct shape {
    const char* what;
    std::vector<uint32_t> lengths;
  };
  std::vector<uint32_t> many_short(700, 17);
  many_short[350] = 0;
  shape shapes[] = {
    {"a row of two batches and more between short ones", {3, 9000, 2, 0, 40}},
    {"short rows over several batch ends", many_short},
    {"long rows back to back", {5000, 4096, 4097, 1}},
  };
  for (auto& sh : shapes) {
    std::vector<triple> ts;
    uint32_t cols = 9100;
    for (uint32_t r = 0; r < sh.lengths.size(); ++r)
      for (uint32_t k = 0; k < sh.lengths[r]; ++k)
        ts.push_back({r, (k * 11 + r * 13) % cols, static_cast<float>(1 + (k + r) % 5)});
    std::sort(ts.begin(), ts.end(),
              [](auto& x, auto& y) { return std::tie(x.row, x.col) < std::tie(y.row, y.col); });
    ts.erase(std::unique(ts.begin(), ts.end(),
                         [](auto& x, auto& y) { return x.row == y.row && x.col == y.col; }),
             ts.end());
    auto a = *from_triples(sh.lengths.size(), cols, ts);
    for (auto solver : {wals_solver::cg, wals_solver::cholesky}) {
      SCOPED_TRACE(std::string(sh.what) + ", " + to_string(solver));
      auto p = closed_form_params(solver);
      auto v = random_factors(a.cols, p.dim, 29);
      auto g = gramian_of(v, a.cols, p.dim);
      factor_view other{v.data(), a.cols, p.dim};
      std::vector<float> whole(a.rows * p.dim, 0.0f), alone(whole.size(), 0.0f);
      solve_rows(a, 0, a.rows, other, g, p, whole.data());
      for (uint64_t r = 0; r < a.rows; ++r)
        solve_rows(a, r, r + 1, other, g, p, alone.data() + r * p.dim);
      EXPECT_EQ(whole, alone);
      for (uint64_t r = 0; r < a.rows; r += 97) {
        auto want = dense_solution(a, r, v, p);
        for (uint32_t k = 0; k < p.dim; ++k)
          ASSERT_NEAR(whole[r * p.dim + k], want[k], 2e-3 * std::max(1.0, std::abs(want[k])))
            << "row " << r;
      }
    }
  }
}

TEST(solve_rows, CgImprovesOnItsWarmStartTowardsTheExactSolution) {
  wals_params p;
  p.dim = 8;
  auto a = small_matrix(10, 20, 11);
  auto v = random_factors(a.cols, p.dim, 5);
  auto g = gramian_of(v, a.cols, p.dim);
  std::vector<float> exact(a.rows * p.dim);
  p.solver = wals_solver::cholesky;
  solve_rows(a, 0, a.rows, {v.data(), a.cols, p.dim}, g, p, exact.data());
  p.solver = wals_solver::cg;
  double previous = 1e30;
  for (uint32_t steps : {1u, 3u, 32u}) {
    p.cg_steps = steps;
    std::vector<float> x(a.rows * p.dim, 0.0f);
    solve_rows(a, 0, a.rows, {v.data(), a.cols, p.dim}, g, p, x.data());
    double err = 0;
    for (size_t i = 0; i < x.size(); ++i)
      err += (x[i] - exact[i]) * (x[i] - exact[i]);
    EXPECT_LT(err, previous) << steps << " steps";
    previous = err;
  }
  EXPECT_LT(previous, 1e-6);
}

TEST(loss, TraceTrickEqualsTheSumOverEveryEntry) {
  wals_params p;
  p.dim = 5;
  p.sigma = 0.25f;
  p.lambda = 0.1f;
  auto a = small_matrix(7, 6, 2);
  auto u = random_factors(a.rows, p.dim, 8);
  auto v = random_factors(a.cols, p.dim, 9);
  double want = 0;
  for (uint64_t r = 0; r < a.rows; ++r)
    for (uint64_t c = 0; c < a.cols; ++c) {
      double x = 0;
      for (uint32_t k = 0; k < p.dim; ++k)
        x += double{u[r * p.dim + k]} * v[c * p.dim + k];
      double w = p.sigma, t = 0;
      auto cols = a.row_indices(r);
      for (size_t i = 0; i < cols.size(); ++i)
        if (cols[i] == c) {
          w = observed_weight(p, a.row_values(r)[i]);
          t = 1;
        }
      want += w * (t - x) * (t - x);
    }
  for (auto x : u)
    want += p.lambda * x * x;
  for (auto x : v)
    want += p.lambda * x * x;
  auto got = loss(a, {u.data(), a.rows, p.dim}, {v.data(), a.cols, p.dim}, p);
  EXPECT_NEAR(got.total(), want, 1e-4 * want);
}

TEST(train_local, LossDecreasesMonotonicallyWithCholesky) {
  auto a = *synthetic_matrix({300, 200, 3000, 4});
  auto at = transpose(a);
  wals_params p;
  p.dim = 8;
  p.solver = wals_solver::cholesky;
  std::vector<float> u, v;
  auto losses = train_local(a, at, p, 8, 2, u, v);
  ASSERT_EQ(losses.size(), 8u);
  for (size_t i = 1; i < losses.size(); ++i)
    EXPECT_LE(losses[i], losses[i - 1] * (1 + 1e-6)) << "sweep " << i;
  EXPECT_LT(losses.back(), losses.front());
}

TEST(train_local, ThreadCountDoesNotChangeTheResult) {
  auto a = *synthetic_matrix({200, 150, 2000, 6});
  auto at = transpose(a);
  wals_params p;
  p.dim = 8;
  std::vector<float> u1, v1, u2, v2;
  train_local(a, at, p, 3, 1, u1, v1);
  train_local(a, at, p, 3, 2, u2, v2);
  EXPECT_EQ(u1, u2);
  EXPECT_EQ(v1, v2);
}

TEST(project, EqualsTheHalfStepOfAKnownRow) {
  wals_params p;
  p.dim = 6;
  p.solver = wals_solver::cholesky;
  auto a = small_matrix(6, 10, 21);
  auto v = random_factors(a.cols, p.dim, 4);
  auto g = gramian_of(v, a.cols, p.dim);
  std::vector<float> u(a.rows * p.dim, 0.0f);
  solve_rows(a, 0, a.rows, {v.data(), a.cols, p.dim}, g, p, u.data());
  for (uint64_t r = 0; r < a.rows; ++r) {
    auto ids = a.row_indices(r);
    auto values = a.row_values(r);
    auto x = project({v.data(), a.cols, p.dim}, g, {ids.begin(), ids.end()},
                     {values.begin(), values.end()}, p);
    ASSERT_TRUE(x) << render(x.error());
    for (uint32_t k = 0; k < p.dim; ++k)
      EXPECT_NEAR((*x)[k], u[r * p.dim + k], 1e-5);
  }
}

TEST(project, RejectsBadInput) {
  wals_params p;
  p.dim = 2;
  std::vector<float> v = {1, 0, 0, 1};
  auto g = gramian_of(v, 2, 2);
  std::vector<uint32_t> out_of_range = {5};
  std::vector<float> one = {1}, negative = {-1}, nan = {std::nanf("")};
  std::vector<uint32_t> ok = {1};
  EXPECT_TRUE(
    is(error_of(project({v.data(), 2, 2}, g, out_of_range, one, p)), errc::invalid_argument));
  EXPECT_TRUE(is(error_of(project({v.data(), 2, 2}, g, ok, negative, p)), errc::invalid_argument));
  EXPECT_TRUE(is(error_of(project({v.data(), 2, 2}, g, ok, nan, p)), errc::invalid_argument));
  p.dim = 3;
  EXPECT_TRUE(is(error_of(project({v.data(), 2, 2}, g, ok, one, p)), errc::dimension_mismatch));
}

TEST(validate, NamesEachBadParameter) {
  struct bad_case {
    const char* what;
    void (*apply)(wals_params&);
  } cases[] = {
    {"dim", [](wals_params& p) { p.dim = 0; }},
    {"alpha", [](wals_params& p) { p.alpha = -1; }},
    {"sigma", [](wals_params& p) { p.sigma = -0.5f; }},
    {"lambda", [](wals_params& p) { p.lambda = std::nanf(""); }},
    {"both 0",
     [](wals_params& p) {
       p.sigma = 0;
       p.lambda = 0;
     }},
    {"cg", [](wals_params& p) { p.cg_steps = 0; }},
  };
  EXPECT_FALSE(validate(wals_params{}));
  for (auto& c : cases) {
    wals_params p;
    c.apply(p);
    auto err = validate(p);
    EXPECT_TRUE(is(err, errc::invalid_argument)) << c.what;
  }
}

} // namespace
} // namespace darcy::compute
