// The Estimator's layers on the tape: each one's backward against central finite differences
// of L = Σ R ⊙ layer(x), in float (so with a loose tolerance), and its shapes.
#include "ops/estimator/layers.hpp"

#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "compute/nn/optimizers.hpp"
#include "messages/error.hpp"
#include "ops/estimator/model_context.hpp"

namespace darcy::ops::estimator {
namespace {

matrix random_matrix(Eigen::Index rows, Eigen::Index cols, std::mt19937_64& rng) {
  std::normal_distribution<float> draw;
  matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    auto v = draw(rng);
    m.data()[i] = v < 0 ? v - 0.1f : v + 0.1f; // away from ReLU's kink
  }
  return m;
}

TEST(estimator_layers, every_layer_backward_matches_finite_differences) {
  struct {
    const char* name;
    Eigen::Index out_cols;
    std::function<tensor(model_context&, tensor)> layer;
  } cases[] = {
    {"dense", 2, [](model_context& c, tensor x) { return dense(c, x, 2, "d"); }},
    {"relu", 3, [](model_context& c, tensor x) { return relu(c, x); }},
    {"add to itself", 3, [](model_context& c, tensor x) { return add(c, x, x); }},
    {"append_ones", 4, [](model_context& c, tensor x) { return append_ones(c, x); }},
    {"append_ones after dense", 3,
     [](model_context& c, tensor x) { return append_ones(c, dense(c, x, 2, "d")); }},
    {"dropout", 3, [](model_context& c, tensor x) { return dropout(c, x, 0.5f, "drop"); }},
    {"batch_norm", 3, [](model_context& c, tensor x) { return batch_norm(c, x, "bn"); }},
    // Two embeddings of width 2 beside a dense vector of width 2: 2 + 3 outputs.
    {"dot_interaction", 5,
     [](model_context& c, tensor x) {
       return *dot_interaction(c, dense(c, x, 2, "bottom"), dense(c, x, 4, "embeddings"));
     }},
  };
  for (auto& c : cases) {
    std::mt19937_64 rng{11};
    variable_store vars;
    matrix x = random_matrix(4, 3, rng);
    matrix r = random_matrix(4, c.out_cols, rng);
    auto forward = [&](const matrix& input, matrix* dx) {
      model_context ctx{vars, mode::train, 3, 1};
      // A recorded input (not a constant) so that its gradient is kept.
      auto in = ctx.record(input, [](model_context&, tensor) {});
      auto out = c.layer(ctx, in);
      EXPECT_EQ(ctx.value(out).cols(), c.out_cols) << c.name;
      float loss = ctx.value(out).cwiseProduct(r).sum();
      if (dx) {
        ctx.backpropagate(out, r);
        *dx = ctx.grad(in);
      }
      return loss;
    };
    matrix dx;
    forward(x, &dx);
    ASSERT_EQ(dx.rows(), x.rows()) << c.name;
    constexpr float step = 1e-2f;
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      matrix up = x, down = x;
      up.data()[i] += step;
      down.data()[i] -= step;
      auto numeric = (forward(up, nullptr) - forward(down, nullptr)) / (2 * step);
      EXPECT_NEAR(dx.data()[i], numeric, 2e-2f * (1 + std::abs(numeric))) << c.name << " at " << i;
    }
  }
}

TEST(estimator_layers, dropout_scales_what_it_keeps_draws_anew_each_step_and_only_in_training) {
  variable_store vars;
  matrix x = matrix::Constant(50, 40, 2.0f);
  auto apply = [&](mode m, uint64_t step) {
    model_context ctx{vars, m, 7, 1};
    ctx.set_step(step);
    return matrix{ctx.value(dropout(ctx, ctx.constant(x), 0.25f, "d"))};
  };
  auto first = apply(mode::train, 1);
  auto kept = (first.array() != 0).count();
  EXPECT_NEAR(double(kept) / double(x.size()), 0.75, 0.05);
  EXPECT_TRUE(((first.array() == 0) || (first.array() == 2.0f / 0.75f)).all());
  EXPECT_EQ(apply(mode::train, 1), first) << "the same step draws the same mask";
  EXPECT_NE(apply(mode::train, 2), first) << "another step draws another";
  EXPECT_EQ(apply(mode::eval, 1), x);
  EXPECT_EQ(apply(mode::predict, 1), x);
}

TEST(estimator_layers, batch_norm_trains_its_moving_averages_and_evaluates_with_them) {
  std::mt19937_64 rng{4};
  variable_store vars;
  matrix x = random_matrix(16, 2, rng);
  x.col(1).array() = x.col(1).array() * 3 + 5;
  compute::nn::optimizer opt{compute::adam_optimizer(0.01f)};
  for (uint64_t step = 0; step < 400; ++step) {
    model_context ctx{vars, mode::train, 1, 1};
    auto y = batch_norm(ctx, ctx.record(x, [](model_context&, tensor) {}), "bn", 0.9f);
    ctx.backpropagate(y, matrix::Zero(16, 2));
    opt.step(vars.all());
  }
  // Zero loss gradients leave gamma and beta; the averages reach the batch's statistics.
  matrix mean = x.colwise().mean();
  matrix var = (x.rowwise() - mean.row(0)).cwiseAbs2().colwise().mean();
  EXPECT_TRUE(vars.find("bn/moving_mean")->value.isApprox(mean, 1e-4f));
  EXPECT_TRUE(vars.find("bn/moving_variance")->value.isApprox(var, 1e-4f));
  EXPECT_EQ(vars.find("bn/gamma")->value, matrix::Ones(1, 2));
  // Evaluation normalises by the averages: a row equal to the mean maps to beta (0).
  model_context eval{vars, mode::eval, 1, 1};
  auto y = batch_norm(eval, eval.constant(mean), "bn", 0.9f);
  EXPECT_LT(eval.value(y).cwiseAbs().maxCoeff(), 1e-3f);
}

TEST(estimator_layers, dot_interaction_refuses_embeddings_not_a_multiple_of_the_dense_width) {
  variable_store vars;
  model_context ctx{vars, mode::train, 1, 1};
  auto got =
    dot_interaction(ctx, ctx.constant(matrix::Ones(2, 3)), ctx.constant(matrix::Ones(2, 4)));
  ASSERT_FALSE(got);
  EXPECT_TRUE(is(got.error(), errc::dimension_mismatch)) << render(got.error());
}

} // namespace
} // namespace darcy::ops::estimator
