#include "compute/moe/moe_layer.hpp"

#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "compute/moe/hierarchical_moe.hpp"
#include "compute/nn/init.hpp"
#include "gpu/device.hpp"
#include "tests/support/gradient_check.hpp"

namespace darcy::compute::moe {
namespace {

using mat = matrix_t<double>;
using test::expect_gradient;

/// Gate weights away from their all-zero start, so that no two logits tie.
void randomize_gate(nn::layer<double>& layer, std::mt19937_64& rng) {
  for (auto* p : layer.parameters())
    if (p->name == "w_gate" || p->name == "w_noise")
      p->value = nn::normal<double>(p->value.rows(), p->value.cols(), 1.0, rng);
}

struct gradient_case {
  const char* name;
  moe_config cfg;
};

TEST(moe_layer, the_whole_layer_backward_matches_finite_differences_gate_included) {
  auto cfg = [](mask_kind mask, uint32_t k, expert_kind expert, double balance, double importance,
                double load, balance_input on = balance_input::gates) {
    moe_config c;
    c.dim = 3;
    c.expert = expert;
    c.hidden = 5;
    c.gating = {.experts = 4,
                .k = k,
                .mask = mask,
                .balance_weight = balance,
                .balance_on = on,
                .importance_weight = importance,
                .load_weight = load,
                .seed = 11};
    return c;
  };
  gradient_case cases[] = {
    {"top-2 linear, balance and importance",
     cfg(mask_kind::top_k, 2, expert_kind::linear, 0.3, 0.2, 0)},
    {"top-1 ffn", cfg(mask_kind::top_k, 1, expert_kind::ffn, 0, 0, 0)},
    {"noisy top-2, importance and load",
     cfg(mask_kind::noisy_top_k, 2, expert_kind::linear, 0, 0.2, 0.5)},
    {"batchwise k=2, balance", cfg(mask_kind::batchwise, 2, expert_kind::linear, 0.3, 0, 0)},
    {"top-2 linear, balance over the softmax",
     cfg(mask_kind::top_k, 2, expert_kind::linear, 0.3, 0, 0, balance_input::softmax)},
    {"noisy top-2, balance", cfg(mask_kind::noisy_top_k, 2, expert_kind::ffn, 0.4, 0, 0)},
  };
  for (auto& c : cases) {
    std::mt19937_64 rng{21};
    auto layer = moe_layer<double>::make(c.cfg);
    ASSERT_TRUE(layer) << render(layer.error());
    auto& moe = **layer;
    randomize_gate(moe, rng);
    mat x = nn::normal<double>(6, 3, 1.0, rng);
    mat r = nn::normal<double>(6, 3, 1.0, rng);
    auto loss = [&] { return moe.forward(x).cwiseProduct(r).sum() + moe.aux_loss(); };
    loss();
    mat dx = moe.backward(r);
    expect_gradient(std::string{c.name} + " dx", x, dx, loss);
    for (auto* p : moe.parameters()) {
      if (p->name == "thresholds")
        continue; // trained by threshold_loss(), which is not part of this loss
      mat grad = p->grad;
      expect_gradient(std::string{c.name} + " d" + p->name, p->value, grad, loss);
    }
  }
}

TEST(moe_layer, top_k_sends_each_example_to_k_experts_and_batchwise_to_m_per_expert) {
  std::mt19937_64 rng{2};
  mat x = nn::normal<double>(64, 8, 1.0, rng);
  for (auto mask : {mask_kind::top_k, mask_kind::batchwise}) {
    moe_config cfg{.dim = 8, .gating = {.experts = 8, .k = 2, .mask = mask}};
    auto layer = moe_layer<double>::make(cfg);
    ASSERT_TRUE(layer);
    randomize_gate(**layer, rng);
    (*layer)->forward(x);
    auto& plan = (*layer)->plan();
    EXPECT_EQ(plan.slots(), 64u * 2);
    if (mask == mask_kind::batchwise) {
      for (uint32_t e = 0; e < 8; ++e)
        EXPECT_EQ(plan.expert_batch(e), 16u) << "expert " << e;
    }
  }
}

TEST(moe_layer, bad_configs_are_refused_with_a_clear_error) {
  struct {
    const char* name;
    moe_config cfg;
    const char* mentions;
  } cases[] = {
    {"k above the experts", {.dim = 4, .gating = {.experts = 4, .k = 5}}, "k must be in"},
    {"k of 0", {.dim = 4, .gating = {.experts = 4, .k = 0}}, "k must be in"},
    {"zero experts", {.dim = 4, .gating = {.experts = 0, .k = 1}}, "experts must be"},
    {"zero width", {.dim = 0, .gating = {.experts = 4, .k = 1}}, "width"},
    {"ffn without hidden units",
     {.dim = 4, .expert = expert_kind::ffn, .hidden = 0, .gating = {.experts = 4, .k = 1}},
     "hidden"},
    {"load loss without noise",
     {.dim = 4, .gating = {.experts = 4, .k = 1, .load_weight = 1}},
     "noisy_top_k"},
    {"negative weight",
     {.dim = 4, .gating = {.experts = 4, .k = 1, .balance_weight = -1}},
     "balance_weight"},
  };
  for (auto& c : cases) {
    auto layer = moe_layer<float>::make(c.cfg);
    ASSERT_FALSE(layer) << c.name;
    EXPECT_TRUE(is(layer.error(), errc::invalid_config)) << c.name;
    EXPECT_NE(render(layer.error()).find(c.mentions), std::string::npos)
      << c.name << ": " << render(layer.error());
  }
}

TEST(hierarchical_moe, one_group_equals_the_flat_layer) {
  moe_config cfg{.dim = 4, .gating = {.experts = 6, .k = 2, .balance_weight = 0.1, .seed = 5}};
  auto flat = moe_layer<double>::make(cfg);
  auto inner = moe_layer<double>::make(cfg);
  ASSERT_TRUE(flat && inner);
  std::mt19937_64 rng_a{8}, rng_b{8};
  randomize_gate(**flat, rng_a);
  randomize_gate(**inner, rng_b);
  std::vector<std::unique_ptr<moe_layer<double>>> groups;
  groups.push_back(std::move(*inner));
  hierarchical_moe<double> tree{4, {.experts = 1, .k = 1}, std::move(groups)};
  std::mt19937_64 rng{9};
  mat x = nn::normal<double>(10, 4, 1.0, rng);
  mat dy = nn::normal<double>(10, 4, 1.0, rng);
  EXPECT_TRUE(tree.forward(x).isApprox((*flat)->forward(x), 1e-12));
  EXPECT_NEAR(tree.aux_loss(), (*flat)->aux_loss(), 1e-12);
  EXPECT_TRUE(tree.backward(dy).isApprox((*flat)->backward(dy), 1e-12));
  auto flat_params = (*flat)->parameters();
  auto tree_params = tree.group(0).parameters();
  ASSERT_EQ(flat_params.size(), tree_params.size());
  for (size_t i = 0; i < flat_params.size(); ++i)
    EXPECT_TRUE(tree_params[i]->grad.isApprox(flat_params[i]->grad, 1e-12)) << i;
}

TEST(hierarchical_moe, its_backward_matches_finite_differences) {
  moe_config group{.dim = 3, .gating = {.experts = 3, .k = 2, .importance_weight = 0.1, .seed = 4}};
  auto tree = hierarchical_moe<double>::make({.experts = 2, .k = 1, .balance_weight = 0.2}, group);
  ASSERT_TRUE(tree) << render(tree.error());
  std::mt19937_64 rng{10};
  randomize_gate(**tree, rng);
  mat x = nn::normal<double>(8, 3, 1.0, rng);
  mat r = nn::normal<double>(8, 3, 1.0, rng);
  auto loss = [&] { return (*tree)->forward(x).cwiseProduct(r).sum() + (*tree)->aux_loss(); };
  loss();
  mat dx = (*tree)->backward(r);
  expect_gradient("dx", x, dx, loss);
  for (auto* p : (*tree)->parameters()) {
    mat grad = p->grad;
    expect_gradient("d" + p->name, p->value, grad, loss);
  }
}

} // namespace
} // namespace darcy::compute::moe

namespace darcy::compute::moe {
namespace {

TEST(moe_layer, threads_change_no_result) {
  for (auto expert : {expert_kind::linear, expert_kind::ffn}) {
    moe_config cfg{.dim = 16,
                   .expert = expert,
                   .hidden = 24,
                   .gating = {.experts = 8, .k = 2, .importance_weight = 0.1, .seed = 3}};
    auto one = moe_layer<double>::make(cfg);
    auto many = moe_layer<double>::make(cfg);
    ASSERT_TRUE(one && many);
    std::mt19937_64 rng_a{4}, rng_b{4};
    randomize_gate(**one, rng_a);
    randomize_gate(**many, rng_b);
    (*many)->set_threads(3);
    std::mt19937_64 rng{5};
    mat x = nn::normal<double>(300, 16, 1.0, rng);
    mat dy = nn::normal<double>(300, 16, 1.0, rng);
    EXPECT_TRUE((*many)->forward(x).isApprox((*one)->forward(x), 1e-12));
    EXPECT_TRUE((*many)->backward(dy).isApprox((*one)->backward(dy), 1e-12));
    auto a = (*one)->parameters();
    auto b = (*many)->parameters();
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(b[i]->grad.isApprox(a[i]->grad, 1e-12)) << i;
  }
}

} // namespace
} // namespace darcy::compute::moe

namespace darcy::compute::moe {
namespace {

TEST(moe_layer, noisy_gates_draw_the_same_noise_within_a_step_and_new_noise_the_next) {
  moe_config cfg{.dim = 6, .gating = {.experts = 8, .k = 2, .mask = mask_kind::noisy_top_k}};
  auto layer = moe_layer<double>::make(cfg);
  ASSERT_TRUE(layer);
  std::mt19937_64 rng{12};
  randomize_gate(**layer, rng);
  mat x = nn::normal<double>(32, 6, 1.0, rng);
  (*layer)->set_step(0);
  mat first = (*layer)->forward(x);
  EXPECT_EQ((*layer)->forward(x), first);
  (*layer)->set_step(1);
  EXPECT_NE((*layer)->forward(x), first);
  (*layer)->set_training(false);
  mat plain = (*layer)->forward(x);
  (*layer)->set_step(2);
  EXPECT_EQ((*layer)->forward(x), plain) << "no noise at inference";
}

TEST(moe_layer, use_gpu_without_a_device_is_unavailable_and_the_layer_stays_on_the_cpu) {
  if (gpu::device_count() > 0)
    GTEST_SKIP() << "a CUDA device is present (darcy_gpu_tests compares the two paths)";
  moe_config cfg{.dim = 4, .gating = {.experts = 3, .k = 1}};
  auto on_cpu = moe_layer<float>::make(cfg);
  auto layer = moe_layer<float>::make(cfg);
  ASSERT_TRUE(on_cpu && layer);
  auto err = (*layer)->use_gpu();
  EXPECT_EQ(err.code, errc::unavailable);
  EXPECT_NE(err.context.find("gpu moe"), std::string::npos) << err.context;
  EXPECT_FALSE((*layer)->on_gpu());
  std::mt19937_64 rng{2};
  matrix_t<float> w = nn::normal<float>(4, 3, 1.0f, rng);
  (*on_cpu)->gating().parameters().front()->value = w;
  (*layer)->gating().parameters().front()->value = w;
  matrix_t<float> x = nn::normal<float>(5, 4, 1.0f, rng);
  EXPECT_EQ((*layer)->forward(x), (*on_cpu)->forward(x));

  auto tree = hierarchical_moe<float>::make({.experts = 2, .k = 1}, cfg);
  ASSERT_TRUE(tree);
  EXPECT_EQ((*tree)->use_gpu().code, errc::unavailable);
  for (uint32_t g = 0; g < 2; ++g)
    EXPECT_FALSE((*tree)->group(g).on_gpu()) << "no group is left on the GPU";
}

} // namespace
} // namespace darcy::compute::moe
