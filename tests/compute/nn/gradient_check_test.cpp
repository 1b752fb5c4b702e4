// Every layer's backward against central finite differences, in double precision: for a
// random input x and a random weighting R of the outputs, L = Σ R ⊙ f(x), so that dL/dy = R.
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "compute/nn/dense.hpp"
#include "compute/nn/dropout.hpp"
#include "compute/nn/init.hpp"
#include "compute/nn/layer_norm.hpp"
#include "compute/nn/lstm.hpp"
#include "compute/nn/relu.hpp"
#include "compute/nn/sampled_softmax.hpp"
#include "compute/nn/sequential.hpp"
#include "compute/nn/softmax_cross_entropy.hpp"
#include "tests/support/gradient_check.hpp"

namespace darcy::compute::nn {
namespace {

using mat = matrix_t<double>;
using test::expect_gradient;

/// x away from 0, so that no finite difference straddles a ReLU's kink.
mat input(Eigen::Index rows, Eigen::Index cols, std::mt19937_64& rng) {
  mat x = normal<double>(rows, cols, 1.0, rng);
  return x.unaryExpr([](double v) { return v < 0 ? v - 0.1 : v + 0.1; });
}

struct layer_case {
  const char* name;
  Eigen::Index in;
  Eigen::Index out;
  std::function<std::unique_ptr<layer<double>>(std::mt19937_64&)> make;
};

TEST(nn_gradients, every_layer_backward_matches_finite_differences) {
  layer_case cases[] = {
    {"dense", 5, 3, [](auto& rng) { return std::make_unique<dense<double>>(5, 3, rng); }},
    {"dense without bias", 4, 6,
     [](auto& rng) { return std::make_unique<dense<double>>(4, 6, rng, false); }},
    {"relu", 5, 5, [](auto&) { return std::make_unique<relu<double>>(); }},
    {"dropout in training", 6, 6, [](auto&) { return std::make_unique<dropout<double>>(0.3, 9); }},
    {"layer norm", 6, 6,
     [](auto&) {
       auto norm = std::make_unique<layer_norm<double>>(6);
       // Gains and biases away from their start, so their gradients are general.
       std::mt19937_64 r{4};
       for (auto* p : norm->parameters())
         p->value += normal<double>(1, 6, 0.5, r);
       return norm;
     }},
    {"residual dense", 4, 4,
     [](auto& rng) {
       return std::make_unique<residual<double>>(std::make_unique<dense<double>>(4, 4, rng));
     }},
    {"feed-forward network", 4, 4,
     [](auto& rng) {
       auto ffn = std::make_unique<sequential<double>>();
       ffn->add(std::make_unique<dense<double>>(4, 8, rng));
       ffn->add(std::make_unique<relu<double>>());
       ffn->add(std::make_unique<dense<double>>(8, 4, rng));
       return ffn;
     }},
  };
  for (auto& c : cases) {
    std::mt19937_64 rng{17};
    auto l = c.make(rng);
    mat x = input(3, c.in, rng);
    mat r = normal<double>(3, c.out, 1.0, rng);
    auto loss = [&] { return l->forward(x).cwiseProduct(r).sum(); };
    loss();
    mat dx = l->backward(r);
    expect_gradient(std::string{c.name} + " dx", x, dx, loss);
    for (auto* p : l->parameters()) {
      mat grad = p->grad;
      expect_gradient(std::string{c.name} + " d" + p->name, p->value, grad, loss);
    }
  }
}

TEST(nn_gradients, lstm_backward_through_time_matches_finite_differences) {
  std::mt19937_64 rng{5};
  lstm<double> cell{3, 4, rng};
  std::vector<mat> xs, rs;
  for (int t = 0; t < 4; ++t) {
    xs.push_back(normal<double>(2, 3, 1.0, rng));
    rs.push_back(normal<double>(2, 4, 1.0, rng));
  }
  lstm_state<double> start{normal<double>(2, 4, 0.5, rng), normal<double>(2, 4, 0.5, rng)};
  auto loss = [&] {
    auto hs = cell.forward(xs, start);
    double total = 0;
    for (size_t t = 0; t < hs.size(); ++t)
      total += hs[t].cwiseProduct(rs[t]).sum();
    return total;
  };
  loss();
  auto dxs = cell.backward(rs);
  for (size_t t = 0; t < xs.size(); ++t)
    expect_gradient("lstm dx_" + std::to_string(t), xs[t], dxs[t], loss);
  for (auto* p : cell.parameters()) {
    mat grad = p->grad;
    expect_gradient("lstm d" + p->name, p->value, grad, loss);
  }
}

TEST(nn_gradients, softmax_cross_entropy_matches_finite_differences) {
  std::mt19937_64 rng{6};
  mat logits = normal<double>(4, 5, 2.0, rng);
  std::vector<uint32_t> labels = {0, 4, 2, 2};
  softmax_cross_entropy<double> ce;
  auto loss = [&] { return ce.forward(logits, labels); };
  loss();
  expect_gradient("logits", logits, ce.backward(), loss);
}

TEST(nn_gradients, soft_target_cross_entropy_matches_finite_differences_beside_masked_columns) {
  std::mt19937_64 rng{8};
  mat logits = normal<double>(3, 5, 2.0, rng);
  mat targets = mat::Zero(3, 5);
  targets(0, 1) = 1;                   // one label
  targets(1, 0) = targets(1, 3) = 0.5; // two labels, half each
  targets(2, 2) = 1;
  logits(2, 4) = -1e30; // padding: masked, target 0
  mat d;
  auto loss = [&] { return soft_target_cross_entropy<double>(logits, targets, d); };
  auto at_start = loss();
  mat dlogits = d;
  EXPECT_TRUE(std::isfinite(at_start));
  EXPECT_EQ(dlogits(2, 4), 0.0);
  // Finite differences everywhere but the masked entry, which has no finite neighbourhood.
  mat unmasked = logits;
  unmasked(2, 4) = 0;
  mat probe_grad = dlogits;
  auto unmasked_loss = [&] {
    mat z = unmasked;
    z(2, 4) = -1e30;
    return soft_target_cross_entropy<double>(z, targets, d);
  };
  probe_grad(2, 4) = 0;
  expect_gradient("logits", unmasked, probe_grad, unmasked_loss);
  // One-hot targets give the hard-label loss.
  softmax_cross_entropy<double> hard;
  mat one_hot = mat::Zero(3, 5);
  std::vector<uint32_t> labels = {1, 3, 0};
  for (size_t r = 0; r < labels.size(); ++r)
    one_hot(static_cast<Eigen::Index>(r), labels[r]) = 1;
  mat z = normal<double>(3, 5, 1.0, rng);
  EXPECT_NEAR(soft_target_cross_entropy<double>(z, one_hot, d), hard.forward(z, labels), 1e-12);
}

TEST(nn_gradients, sampled_softmax_matches_finite_differences) {
  std::mt19937_64 rng{7};
  // Rows 0..4: labels 0, 2, 0 and draws 3, 1, 3 (a repeat), 4.
  sampled_candidates c;
  c.rows = {10, 12, 13, 11, 14};
  c.label_index = {0, 1, 0};
  c.sampled_index = {2, 3, 2, 4};
  c.log_q = {-1.0, -2.0, -0.5, -3.0, -1.5};
  mat h = normal<double>(3, 4, 1.0, rng);
  mat w = normal<double>(5, 4, 1.0, rng);
  mat b = normal<double>(1, 5, 1.0, rng);
  sampled_softmax<double> s;
  auto loss = [&] { return s.forward(h, w, b, c); };
  loss();
  auto g = s.backward();
  expect_gradient("h", h, g.h, loss);
  expect_gradient("weights", w, g.weights, loss);
  expect_gradient("bias", b, g.bias, loss);
}

} // namespace
} // namespace darcy::compute::nn
