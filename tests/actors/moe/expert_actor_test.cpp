// One expert actor on its own: what it does with requests that arrive twice or late, as a
// router that asks again after a lost message sends them.
#include "actors/moe/expert_actor.hpp"

#include <random>

#include <gtest/gtest.h>

#include "compute/nn/init.hpp"
#include "messages/error.hpp"
#include "tests/support/moe_steps.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using compute::nn::matrix;

moe_config layer() {
  moe_config cfg;
  cfg.dim = 4;
  cfg.expert = expert_kind::ffn;
  cfg.hidden = 3;
  cfg.gating = {.experts = 2, .k = 1, .seed = 5};
  return cfg;
}

class expert_actor_test : public test::system_fixture {
protected:
  expert_actor spawn() {
    auto e = sys.spawn(moe_expert, expert_config{layer(), 0, 0.05});
    guards.push_back(std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(e)));
    return e;
  }

  /// The answer of `e` to a forward (or backward) of `step` with `m`, or its error.
  caf::expected<matrix> ask(const expert_actor& e, bool forward, uint64_t step, const matrix& m) {
    caf::expected<matrix> result = caf::error{};
    auto block = test::moe_block(step, m, 0, m.rows());
    auto on_reply = [&](row_block& b) {
      result = matrix{Eigen::Map<const matrix>{b.values.values().data(), b.rows, m.cols()}};
    };
    auto on_error = [&](caf::error& err) { result = std::move(err); };
    if (forward)
      self->request(e, test::patience, forward_atom::value, block).receive(on_reply, on_error);
    else
      self->request(e, test::patience, backward_atom::value, block).receive(on_reply, on_error);
    return result;
  }

  std::vector<std::unique_ptr<test::stop_on_exit>> guards;
};

TEST_F(expert_actor_test, a_repeated_backward_is_applied_once_and_answered_again) {
  auto once = spawn();
  auto twice = spawn();
  std::mt19937_64 rng{3};
  for (uint64_t step = 0; step < 3; ++step) {
    matrix x = compute::nn::normal<float>(5, 4, 1.0f, rng);
    matrix dy = compute::nn::normal<float>(5, 4, 1.0f, rng);
    auto y1 = ask(once, true, step, x);
    auto y2 = ask(twice, true, step, x);
    ASSERT_TRUE(y1 && y2);
    EXPECT_EQ(*y1, *y2) << "step " << step;
    // A repeated forward of the same step is answered alike and changes nothing.
    auto again = ask(twice, true, step, x);
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *y2);
    auto dx1 = ask(once, false, step, dy);
    auto dx2 = ask(twice, false, step, dy);
    auto dx2_repeat = ask(twice, false, step, dy);
    ASSERT_TRUE(dx1 && dx2 && dx2_repeat) << render(error_of(dx2_repeat));
    EXPECT_EQ(*dx1, *dx2);
    EXPECT_EQ(*dx2_repeat, *dx2) << "the repeated backward's answer";
  }
}

TEST_F(expert_actor_test, a_late_forward_of_an_applied_step_is_refused_and_disturbs_nothing) {
  auto e = spawn();
  matrix x = matrix::Ones(3, 4);
  matrix dy = matrix::Constant(3, 4, 0.5f);
  ASSERT_TRUE(ask(e, true, 0, x));
  ASSERT_TRUE(ask(e, false, 0, dy));
  ASSERT_TRUE(ask(e, true, 1, x));
  auto late = ask(e, true, 0, x);
  ASSERT_FALSE(late);
  EXPECT_TRUE(is(late.error(), errc::invalid_argument)) << render(late.error());
  auto backward = ask(e, false, 1, dy);
  EXPECT_TRUE(backward) << "the late forward replaced step 1's: " << render(error_of(backward));
}

} // namespace
} // namespace darcy::actors
