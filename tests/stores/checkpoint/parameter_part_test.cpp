// Parameter parts: a restored parameter list and its optimizer state step exactly as the saved
// ones would have, parts of the Adam-only format still read; damaged or mismatched parts are
// refused and change nothing.
#include "stores/checkpoint/parameter_part.hpp"

#include <random>

#include <gtest/gtest.h>

#include "compute/nn/init.hpp"
#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

using compute::nn::matrix;
using compute::nn::parameter;

struct model {
  parameter<float> w{"w", matrix::Zero(3, 4)};
  parameter<float> b{"b", matrix::Zero(1, 4)};
  compute::nn::optimizer opt;

  explicit model(optimizer_config cfg = compute::adam_optimizer(0.1f)) : opt(cfg) {}

  compute::nn::parameter_list<float> params() { return {&w, &b}; }

  /// One step with gradients drawn from `rng`.
  void step(std::mt19937_64& rng) {
    w.grad = compute::nn::normal<float>(3, 4, 1.0f, rng);
    b.grad = compute::nn::normal<float>(1, 4, 1.0f, rng);
    opt.step(params());
  }
};

TEST(parameter_part, a_restored_model_steps_exactly_as_the_saved_one) {
  struct {
    const char* name;
    optimizer_config optimizer;
  } cases[] = {
    {"sgd", {.kind = optimizer_kind::sgd, .learning_rate = 0.1f}},
    {"adagrad", {.kind = optimizer_kind::adagrad, .learning_rate = 0.1f}},
    {"momentum", {.kind = optimizer_kind::momentum, .learning_rate = 0.1f}},
    {"adam", compute::adam_optimizer(0.1f)},
    {"ftrl", {.kind = optimizer_kind::ftrl, .learning_rate = 0.1f, .l1 = 0.01f}},
  };
  for (auto& c : cases) {
    test::temp_dir dir{"parameter_part"};
    checkpoint_dir root{dir.path()};
    std::mt19937_64 rng{1};
    model saved{c.optimizer};
    saved.w.value = compute::nn::normal<float>(3, 4, 1.0f, rng);
    saved.step(rng);
    saved.step(rng);
    auto part = write_parameter_part(root, "ckpt/model.params", saved.params(), saved.opt);
    ASSERT_TRUE(part) << c.name << ": " << render(part.error());
    model restored{c.optimizer};
    ASSERT_FALSE(read_parameter_part(root, *part, restored.params(), restored.opt)) << c.name;
    EXPECT_EQ(restored.w.value, saved.w.value) << c.name;
    std::mt19937_64 a{7}, b{7};
    saved.step(a);
    restored.step(b);
    EXPECT_EQ(restored.w.value, saved.w.value) << c.name << ": the slots and steps came back";
    EXPECT_EQ(restored.b.value, saved.b.value) << c.name;
  }
}

TEST(parameter_part, a_part_of_the_adam_only_format_restores_an_adam_model) {
  model saved;
  std::mt19937_64 rng{3};
  saved.step(rng);
  saved.step(rng);
  // The format before optimizer kinds: another magic and no slot count after the steps.
  auto bytes = encode_parameters(saved.params(), saved.opt);
  auto old = "DARCYNN1" + bytes.substr(8, 8) + bytes.substr(8 + 8 + 4);
  auto saved_b = saved.b.value;
  model restored;
  ASSERT_FALSE(decode_parameters(old, restored.params(), restored.opt));
  std::mt19937_64 a{9}, b{9};
  saved.step(a);
  restored.step(b);
  EXPECT_EQ(restored.w.value, saved.w.value);
  auto values = decode_named_values(old);
  ASSERT_TRUE(values) << render(values.error());
  EXPECT_EQ(values->at("b"), saved_b);
}

TEST(parameter_part, damaged_or_mismatched_bytes_are_refused_and_change_nothing) {
  model source;
  std::mt19937_64 rng{2};
  source.step(rng);
  auto bytes = encode_parameters(source.params(), source.opt);
  auto renamed = bytes;
  renamed[8 + 8 + 4 + 4 + 4] = 'v'; // the first parameter's name
  struct {
    const char* name;
    std::string bytes;
    bool narrow;
    errc expected;
    optimizer_config optimizer = compute::adam_optimizer(0.1f);
  } cases[] = {
    {"empty", "", false, errc::corrupt_file},
    {"another format", "DARCYNN9" + bytes.substr(8), false, errc::corrupt_file},
    {"truncated", bytes.substr(0, bytes.size() - 5), false, errc::corrupt_file},
    {"trailing bytes", bytes + "x", false, errc::corrupt_file},
    {"renamed parameter", renamed, false, errc::dimension_mismatch},
    {"other shape", bytes, true, errc::dimension_mismatch},
    {"Adam's two slots for SGD", bytes, false, errc::dimension_mismatch, optimizer_config{}},
  };
  for (auto& c : cases) {
    model target{c.optimizer};
    if (c.narrow)
      target.w = parameter<float>{"w", matrix::Zero(3, 2)};
    auto before = target.w.value;
    auto err = decode_parameters(c.bytes, target.params(), target.opt);
    EXPECT_TRUE(is(err, c.expected)) << c.name << ": " << render(err);
    EXPECT_EQ(target.w.value, before) << c.name;
  }
}

} // namespace
} // namespace darcy::stores
