// Parameter parts: a restored parameter list and its Adam state step exactly as the saved
// ones would have; damaged or mismatched parts are refused and change nothing.
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
  compute::nn::adam<float> opt{{.learning_rate = 0.1}};

  compute::nn::parameter_list<float> params() { return {&w, &b}; }

  /// One Adam step with gradients drawn from `rng`.
  void step(std::mt19937_64& rng) {
    w.grad = compute::nn::normal<float>(3, 4, 1.0f, rng);
    b.grad = compute::nn::normal<float>(1, 4, 1.0f, rng);
    opt.step(params());
  }
};

TEST(parameter_part, a_restored_model_steps_exactly_as_the_saved_one) {
  test::temp_dir dir{"parameter_part"};
  checkpoint_dir root{dir.path()};
  std::mt19937_64 rng{1};
  model saved;
  saved.w.value = compute::nn::normal<float>(3, 4, 1.0f, rng);
  saved.step(rng);
  saved.step(rng);
  auto part = write_parameter_part(root, "ckpt/model.params", saved.params(), saved.opt);
  ASSERT_TRUE(part) << render(part.error());
  model restored;
  ASSERT_FALSE(read_parameter_part(root, *part, restored.params(), restored.opt));
  EXPECT_EQ(restored.w.value, saved.w.value);
  std::mt19937_64 a{7}, b{7};
  saved.step(a);
  restored.step(b);
  EXPECT_EQ(restored.w.value, saved.w.value) << "the moments and the step count came back";
  EXPECT_EQ(restored.b.value, saved.b.value);
}

TEST(parameter_part, damaged_or_mismatched_bytes_are_refused_and_change_nothing) {
  model source;
  std::mt19937_64 rng{2};
  source.step(rng);
  auto bytes = encode_parameters(source.params(), source.opt);
  auto renamed = bytes;
  renamed[8 + 8 + 4 + 4] = 'v'; // the first parameter's name
  struct {
    const char* name;
    std::string bytes;
    bool narrow;
    errc expected;
  } cases[] = {
    {"empty", "", false, errc::corrupt_file},
    {"another format", "DARCYNN9" + bytes.substr(8), false, errc::corrupt_file},
    {"truncated", bytes.substr(0, bytes.size() - 5), false, errc::corrupt_file},
    {"trailing bytes", bytes + "x", false, errc::corrupt_file},
    {"renamed parameter", renamed, false, errc::dimension_mismatch},
    {"other shape", bytes, true, errc::dimension_mismatch},
  };
  for (auto& c : cases) {
    model target;
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
