// The GPU MoE layer against compute/moe with the same parameters: outputs, input gradients,
// every parameter's gradient and the auxiliary losses, for linear and FFN experts under top-k,
// noisy top-k and batchwise masks, with the experts' products grouped and on streams, and the
// ungated layer against one CPU expert. The comparisons are skipped without a device; invalid
// shapes are refused with or without one.
#include "gpu/moe_layer.hpp"

#include <cmath>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "compute/moe/expert.hpp"
#include "compute/moe/gpu_parameters.hpp"
#include "compute/moe/hierarchical_moe.hpp"
#include "compute/moe/moe_layer.hpp"
#include "compute/nn/init.hpp"
#include "compute/nn/optimizers.hpp"
#include "gpu/device.hpp"

namespace darcy::gpu {
namespace {

using compute::nn::matrix;

constexpr int rows = 96;

/// max |a − b| relative to the larger magnitude of b, so that one tolerance serves all.
void expect_close(const float* a, const float* b, size_t n, const std::string& what) {
  double worst = 0, scale = 1e-3;
  for (size_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  EXPECT_LE(worst / scale, 2e-5) << what << ": largest difference " << worst << " of " << scale;
}

void expect_close(const std::vector<float>& a, const matrix& b, const std::string& what) {
  ASSERT_EQ(a.size(), size_t(b.size())) << what;
  expect_close(a.data(), b.data(), a.size(), what);
}

void append(std::vector<float>& to, const matrix& m) {
  to.insert(to.end(), m.data(), m.data() + m.size());
}

/// One Adam step of each side's parameters (`want` of the CPU layer, `got` of the same layer
/// on the GPU, in the same order), then their values compared.
void expect_same_adam_step(const compute::nn::parameter_list<float>& want,
                           const compute::nn::parameter_list<float>& got,
                           compute::nn::optimizer& want_adam, compute::nn::optimizer& got_adam) {
  want_adam.step(want);
  got_adam.step(got);
  for (size_t i = 0; i < want.size(); ++i)
    expect_close(got[i]->value.data(), want[i]->value.data(), want[i]->value.size(), want[i]->name);
}

struct layer_case {
  std::string name;
  expert_kind expert;
  mask_kind mask;
  uint32_t k;
  double balance = 0, importance = 0, load = 0;
  balance_input balance_on = balance_input::gates;

  /// The case's layer: width `dim`, FFN experts (if any) of `hidden` units.
  moe_config config(uint32_t dim, uint32_t hidden, uint32_t experts, uint64_t seed) const {
    return {.dim = dim,
            .expert = expert,
            .hidden = hidden,
            .gating = {.experts = experts,
                       .k = k,
                       .mask = mask,
                       .balance_weight = balance,
                       .balance_on = balance_on,
                       .importance_weight = importance,
                       .load_weight = load,
                       .seed = seed}};
  }
};

TEST(gpu_moe_layer, cublas_is_opened_with_every_function_the_layer_calls) {
#ifdef DARCY_HAVE_CUDA
  EXPECT_EQ(cublas_status(), "");
#else
  EXPECT_EQ(cublas_status(), "no CUDA");
#endif
}

TEST(gpu_moe_layer, forward_and_backward_equal_the_cpu_layer) {
  if (device_count() == 0)
    GTEST_SKIP() << "no CUDA device";
  const std::vector<layer_case> cases = {
    {"linear experts, top-1", expert_kind::linear, mask_kind::top_k, 1},
    {"linear experts, top-2", expert_kind::linear, mask_kind::top_k, 2},
    {"linear experts, batchwise k = 4", expert_kind::linear, mask_kind::batchwise, 4},
    {"ffn experts, top-2", expert_kind::ffn, mask_kind::top_k, 2},
    {"ffn experts, batchwise k = 2", expert_kind::ffn, mask_kind::batchwise, 2},
    {"linear experts, noisy top-2", expert_kind::linear, mask_kind::noisy_top_k, 2},
    {"linear experts, noisy top-2, importance and load losses", expert_kind::linear,
     mask_kind::noisy_top_k, 2, 0, 0.5, 0.7},
    {"ffn experts, noisy top-3, all three losses", expert_kind::ffn, mask_kind::noisy_top_k, 3, 0.3,
     0.5, 0.7},
    {"ffn experts, top-2, balance and importance losses", expert_kind::ffn, mask_kind::top_k, 2,
     0.4, 0.6},
    {"linear experts, batchwise k = 2, balance and importance losses", expert_kind::linear,
     mask_kind::batchwise, 2, 0.4, 0.6},
    {"ffn experts, top-2, balance of the softmax gates", expert_kind::ffn, mask_kind::top_k, 2, 0.4,
     0, 0, balance_input::softmax},
    {"linear experts, batchwise k = 2, balance of the softmax gates", expert_kind::linear,
     mask_kind::batchwise, 2, 0.4, 0, 0, balance_input::softmax},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto cfg = c.config(24, 40, 8, 3);
    auto cpu = compute::moe::moe_layer<float>::make(cfg);
    ASSERT_TRUE(cpu);
    std::mt19937_64 rng{5};
    // Random gate weights, and noise weights for a noisy gate (the only other in the list
    // that is not a batchwise gate's thresholds).
    for (auto* w : (*cpu)->gating().parameters()) {
      if (w->name != "thresholds")
        w->value = compute::nn::normal<float>(24, 8, 0.4f, rng);
    }
    matrix x = compute::nn::normal<float>(rows, 24, 1.0f, rng);
    matrix dy = compute::nn::normal<float>(rows, 24, 1.0f, rng);
    constexpr uint64_t step = 7;
    (*cpu)->set_step(step);
    matrix noise = compute::moe::gate_noise<float>(cfg.gating, step, rows);
    matrix y = (*cpu)->forward(x);
    matrix dx = (*cpu)->backward(dy);
    if (c.balance + c.importance + c.load > 0) {
      EXPECT_GT((*cpu)->aux_loss(), 0) << "a case with losses must have a loss to compare";
    }

    // Each phase's products as one grouped cuBLAS call, then one call per expert on streams.
    for (bool grouped : {true, false}) {
      SCOPED_TRACE(grouped ? "grouped products" : "products on streams");
      auto shape = compute::moe::gpu_shape(cfg);
      shape.grouped = grouped;
      std::string error;
      auto gpu = moe_layer::make(shape, error);
      ASSERT_TRUE(gpu) << error;
      ASSERT_EQ(gpu->set_parameters(compute::moe::gpu_parameters(**cpu)), "");
      std::vector<float> gy(rows * 24), gdx(rows * 24);
      ASSERT_EQ(gpu->forward(x.data(), rows, gy.data(), noise.data()), "");
      ASSERT_EQ(gpu->backward(dy.data(), gdx.data()), "");
      EXPECT_NEAR(gpu->aux_loss(), (*cpu)->aux_loss(), 2e-5 * std::max(1.0f, (*cpu)->aux_loss()));
      auto& plan = (*cpu)->plan();
      for (uint32_t e = 0; e < 8; ++e)
        EXPECT_EQ(gpu->expert_batches().at(e), int(plan.expert_batch(e))) << "expert " << e;
      expect_close(gy, y, "y");
      expect_close(gdx, dx, "dx");
      moe_parameters grads;
      ASSERT_EQ(gpu->gradients(grads), "");
      auto want = compute::moe::gpu_parameters(**cpu, true);
      expect_close(grads.w_gate.data(), want.w_gate.data(), want.w_gate.size(), "w_gate grad");
      expect_close(grads.w1.data(), want.w1.data(), want.w1.size(), "w1 grad");
      ASSERT_EQ(grads.b2.size(), want.b2.size());
      expect_close(grads.b1.data(), want.b1.data(), want.b1.size(), "b1 grad");
      expect_close(grads.w2.data(), want.w2.data(), want.w2.size(), "w2 grad");
      expect_close(grads.b2.data(), want.b2.data(), want.b2.size(), "b2 grad");
      ASSERT_EQ(grads.w_noise.size(), want.w_noise.size());
      expect_close(grads.w_noise.data(), want.w_noise.data(), want.w_noise.size(), "w_noise grad");
    }
  }
}

TEST(gpu_moe_layer, an_ungated_layer_is_one_dense_ffn) {
  if (device_count() == 0)
    GTEST_SKIP() << "no CUDA device";
  moe_config cfg;
  cfg.dim = 24;
  cfg.expert = expert_kind::ffn;
  cfg.hidden = 40;
  cfg.gating.experts = 1;
  cfg.gating.k = 1;
  compute::moe::expert<float> cpu{cfg, 0};
  std::mt19937_64 rng{9};
  auto ps = cpu.parameters();
  ps[1]->value = compute::nn::normal<float>(1, 40, 0.5f, rng); // non-zero biases
  ps[3]->value = compute::nn::normal<float>(1, 24, 0.5f, rng);
  matrix x = compute::nn::normal<float>(rows, 24, 1.0f, rng);
  matrix dy = compute::nn::normal<float>(rows, 24, 1.0f, rng);
  matrix hidden(rows, 40), y(rows, 24), dx(rows, 24);
  cpu.forward(x, hidden, y);
  cpu.backward(x, hidden, dy, dx);

  std::string error;
  auto gpu =
    moe_layer::make({.dim = 24, .experts = 1, .k = 1, .hidden = 40, .gated = false}, error);
  ASSERT_TRUE(gpu) << error;
  moe_parameters p;
  append(p.w1, ps[0]->value);
  append(p.b1, ps[1]->value);
  append(p.w2, ps[2]->value);
  append(p.b2, ps[3]->value);
  ASSERT_EQ(gpu->set_parameters(p), "");
  std::vector<float> gy(rows * 24), gdx(rows * 24);
  ASSERT_EQ(gpu->forward(x.data(), rows, gy.data()), "");
  ASSERT_EQ(gpu->backward(dy.data(), gdx.data()), "");
  expect_close(gy, y, "y");
  expect_close(gdx, dx, "dx");
  moe_parameters grads;
  ASSERT_EQ(gpu->gradients(grads), "");
  expect_close(grads.w1, ps[0]->grad, "w1 grad");
  expect_close(grads.b1, ps[1]->grad, "b1 grad");
  expect_close(grads.w2, ps[2]->grad, "w2 grad");
  expect_close(grads.b2, ps[3]->grad, "b2 grad");
}

TEST(gpu_moe_layer, invalid_shapes_are_refused_with_a_reason) {
  const std::vector<std::pair<std::string, moe_shape>> cases = {
    {"no width", {.dim = 0, .experts = 4, .k = 1}},
    {"no experts", {.dim = 8, .experts = 0, .k = 1}},
    {"k above the experts", {.dim = 8, .experts = 4, .k = 5}},
    {"k of 0", {.dim = 8, .experts = 4, .k = 0}},
    {"an ungated layer of two experts", {.dim = 8, .experts = 2, .k = 1, .gated = false}},
    {"noise with a batchwise mask",
     {.dim = 8, .experts = 4, .k = 1, .batchwise = true, .noisy = true}},
    {"noise without a gate", {.dim = 8, .experts = 1, .k = 1, .gated = false, .noisy = true}},
    {"a load loss without noise", {.dim = 8, .experts = 4, .k = 1, .load_weight = 1}},
    {"a negative loss weight", {.dim = 8, .experts = 4, .k = 1, .importance_weight = -1}},
    {"a loss weight that is not a number",
     {.dim = 8, .experts = 4, .k = 1, .balance_weight = std::nanf("")}},
  };
  for (auto& [name, shape] : cases) {
    std::string error;
    EXPECT_EQ(moe_layer::make(shape, error), nullptr) << name;
    EXPECT_NE(error.find("gpu moe"), std::string::npos) << name << ": " << error;
  }
}

TEST(gpu_moe_layer, a_step_before_prepare_is_an_error) {
  if (device_count() == 0)
    GTEST_SKIP() << "no CUDA device";
  std::string error;
  auto gpu = moe_layer::make({.dim = 8, .experts = 4, .k = 2}, error);
  ASSERT_TRUE(gpu) << error;
  EXPECT_NE(gpu->step(), "");
  float x = 0;
  EXPECT_NE(gpu->backward(&x, &x), "");
  EXPECT_NE(gpu->forward(&x, 0, &x), "");
}

/// Trains `cpu` and `moved` (layers of one config, 16 wide with 6 experts) side by side with
/// Adam for `steps` steps on the same seeded batches: outputs, input gradients, auxiliary
/// losses, expert batches, gradients and parameters must agree after each step, and
/// `after_step(step)` adds the caller's checks.
void train_side_by_side(compute::moe::moe_layer<float>& cpu, compute::moe::moe_layer<float>& moved,
                        uint64_t seed, uint64_t steps,
                        const std::function<void(uint64_t)>& after_step) {
  compute::nn::optimizer cpu_adam{compute::adam_optimizer(1e-2)},
    moved_adam{compute::adam_optimizer(1e-2f)};
  std::mt19937_64 rng{seed};
  for (uint64_t step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    matrix x = compute::nn::normal<float>(rows, 16, 1.0f, rng);
    matrix dy = compute::nn::normal<float>(rows, 16, 1.0f, rng);
    cpu.set_step(step);
    moved.set_step(step);
    matrix y = cpu.forward(x), dx = cpu.backward(dy);
    matrix gy = moved.forward(x), gdx = moved.backward(dy);
    after_step(step);
    expect_close(gy.data(), y.data(), y.size(), "y");
    expect_close(gdx.data(), dx.data(), dx.size(), "dx");
    EXPECT_NEAR(moved.aux_loss(), cpu.aux_loss(), 2e-5);
    for (uint32_t e = 0; e < 6; ++e)
      EXPECT_EQ(moved.plan().expert_batch(e), cpu.plan().expert_batch(e));
    auto want = cpu.parameters(), got = moved.parameters();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      expect_close(got[i]->grad.data(), want[i]->grad.data(), want[i]->grad.size(),
                   want[i]->name + " grad");
    expect_same_adam_step(want, got, cpu_adam, moved_adam);
  }
}

// compute/moe's layer moved to the GPU with use_gpu() against the same layer on the CPU,
// both trained by Adam for a few steps: outputs, input gradients, auxiliary losses and every
// parameter (a batchwise gate's thresholds included) after each step.
TEST(gpu_moe_layer, a_layer_moved_to_the_gpu_trains_as_it_does_on_the_cpu) {
  if (device_count() == 0)
    GTEST_SKIP() << "no CUDA device";
  const std::vector<layer_case> cases = {
    {"linear experts, top-1", expert_kind::linear, mask_kind::top_k, 1},
    {"linear experts, noisy top-2, importance and load losses", expert_kind::linear,
     mask_kind::noisy_top_k, 2, 0, 0.5, 0.7},
    {"ffn experts, batchwise k = 2, balance loss", expert_kind::ffn, mask_kind::batchwise, 2, 0.4},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto cfg = c.config(16, 24, 6, 4);
    auto cpu = compute::moe::moe_layer<float>::make(cfg);
    auto moved = compute::moe::moe_layer<float>::make(cfg);
    ASSERT_TRUE(cpu && moved);
    ASSERT_FALSE((*moved)->use_gpu());
    ASSERT_TRUE((*moved)->on_gpu());
    train_side_by_side(**cpu, **moved, 11, 4,
                       [&](uint64_t) { EXPECT_TRUE((*moved)->on_gpu()) << (*moved)->gpu_error(); });
  }
}

// A device lost in the middle of training: the layer finishes the step it failed in, and the
// steps after it, on the CPU, to the results of a layer that never left the CPU. A training
// step makes four device calls: set_parameters, forward, backward, gradients.
TEST(gpu_moe_layer, a_device_lost_mid_step_leaves_that_step_and_the_rest_to_the_cpu) {
  if (device_count() == 0)
    GTEST_SKIP() << "no CUDA device";
  const std::vector<std::pair<std::string, int>> failures = {
    {"set_parameters of step 1", 4},
    {"forward of step 1", 5},
    {"backward of step 1", 6},
    {"gradients of step 1", 7},
  };
  const layer_case c{"ffn experts, noisy top-2, importance and load losses",
                     expert_kind::ffn,
                     mask_kind::noisy_top_k,
                     2,
                     0,
                     0.5,
                     0.7};
  for (auto& [where, calls] : failures) {
    SCOPED_TRACE(where);
    auto cfg = c.config(16, 24, 6, 4);
    auto cpu = compute::moe::moe_layer<float>::make(cfg);
    auto moved = compute::moe::moe_layer<float>::make(cfg);
    ASSERT_TRUE(cpu && moved);
    ASSERT_FALSE((*moved)->use_gpu());
    (*moved)->fail_gpu_after(calls);
    train_side_by_side(**cpu, **moved, 13, 3, [&](uint64_t step) {
      EXPECT_EQ((*moved)->on_gpu(), step == 0);
      if (step > 0) {
        EXPECT_NE((*moved)->gpu_error().find("injected device failure"), std::string::npos)
          << (*moved)->gpu_error();
      }
    });
  }
}

// A hierarchical MoE whose groups moved to the GPU against the same tree on the CPU, trained
// by Adam for a few steps.
TEST(gpu_moe_layer, a_hierarchical_moe_moved_to_the_gpu_trains_as_it_does_on_the_cpu) {
  if (device_count() == 0)
    GTEST_SKIP() << "no CUDA device";
  moe_config group{.dim = 16,
                   .expert = expert_kind::ffn,
                   .hidden = 24,
                   .gating = {.experts = 4,
                              .k = 2,
                              .mask = mask_kind::noisy_top_k,
                              .importance_weight = 0.3,
                              .load_weight = 0.3,
                              .seed = 2}};
  gating_config primary{.experts = 3, .k = 1, .importance_weight = 0.2, .seed = 8};
  auto cpu = compute::moe::hierarchical_moe<float>::make(primary, group);
  auto moved = compute::moe::hierarchical_moe<float>::make(primary, group);
  ASSERT_TRUE(cpu && moved);
  ASSERT_FALSE((*moved)->use_gpu());
  compute::nn::optimizer cpu_adam{compute::adam_optimizer(1e-2)},
    moved_adam{compute::adam_optimizer(1e-2f)};
  std::mt19937_64 rng{12};
  // The same random primary gate on both, so that every group takes rows.
  matrix w = compute::nn::normal<float>(16, 3, 0.5f, rng);
  (*cpu)->primary().parameters().front()->value = w;
  (*moved)->primary().parameters().front()->value = w;
  for (uint64_t step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    matrix x = compute::nn::normal<float>(rows, 16, 1.0f, rng);
    matrix dy = compute::nn::normal<float>(rows, 16, 1.0f, rng);
    (*cpu)->set_step(step);
    (*moved)->set_step(step);
    matrix y = (*cpu)->forward(x), dx = (*cpu)->backward(dy);
    matrix gy = (*moved)->forward(x), gdx = (*moved)->backward(dy);
    for (uint32_t g = 0; g < 3; ++g)
      ASSERT_TRUE((*moved)->group(g).on_gpu()) << (*moved)->group(g).gpu_error();
    expect_close(gy.data(), y.data(), y.size(), "y");
    expect_close(gdx.data(), dx.data(), dx.size(), "dx");
    EXPECT_NEAR((*moved)->aux_loss(), (*cpu)->aux_loss(), 2e-5);
    auto want = (*cpu)->parameters(), got = (*moved)->parameters();
    ASSERT_EQ(got.size(), want.size());
    expect_same_adam_step(want, got, cpu_adam, moved_adam);
  }
}

TEST(gpu_moe_layer, a_noisy_forward_without_its_noise_is_an_error) {
  if (device_count() == 0)
    GTEST_SKIP() << "no CUDA device";
  std::string error;
  auto gpu = moe_layer::make({.dim = 8, .experts = 4, .k = 2, .noisy = true}, error);
  ASSERT_TRUE(gpu) << error;
  std::vector<float> x(8 * 3, 1.0f), y(8 * 3);
  EXPECT_NE(gpu->forward(x.data(), 3, y.data()).find("noise"), std::string::npos);
}

} // namespace
} // namespace darcy::gpu
