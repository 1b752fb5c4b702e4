// The training progress bar: one line per tenth of the run, with the step and the loss.
#include "apps/progress/progress_hook.hpp"

#include <sstream>

#include <gtest/gtest.h>

#include "ops/estimator/estimator.hpp"

namespace darcy::apps {
namespace {

TEST(progress_hook, draws_a_line_per_tenth_with_the_step_and_loss) {
  std::ostringstream out;
  progress_hook hook{200, out};
  ops::estimator::estimator e{{}, {}};
  ASSERT_FALSE(hook.begin(e, 0));
  for (uint64_t step = 1; step <= 200; ++step) {
    auto action = hook.after_step(e, {step, 0.5f, 32, double(step) / 100});
    ASSERT_TRUE(action);
    EXPECT_EQ(*action, ops::estimator::hook_action::go_on);
  }
  ASSERT_FALSE(hook.end(e, 200));
  auto text = out.str();
  EXPECT_NE(text.find("step 200/200  loss 0.5000"), std::string::npos) << text;
  EXPECT_NE(text.find("100 steps/s"), std::string::npos) << text;
  size_t lines = 0;
  for (auto c : text)
    lines += c == '\n';
  EXPECT_GE(lines, 5u) << text;
  EXPECT_LE(lines, 12u) << text;
}

} // namespace
} // namespace darcy::apps
