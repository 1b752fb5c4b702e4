// A MoE layer trained with supervised expert actors: it learns, a rerun resumes from its
// checkpoint, and an expert killed mid-run is restarted and the run, restored from the last
// checkpoint, ends exactly where an uninterrupted run does.
#include "ops/moe_train.hpp"

#include <limits>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops {
namespace {

moe_train_options small_options(const std::string& dir) {
  moe_train_options o;
  o.layer.dim = 8;
  o.layer.gating = {
    .experts = 4, .k = 2, .mask = mask_kind::batchwise, .balance_weight = 0.01, .seed = 3};
  o.replicas = 2;
  o.batch = 32;
  o.steps = 24;
  o.learning_rate = 0.03;
  o.checkpoint_every = 5;
  o.checkpoint_dir = dir;
  return o;
}

class moe_train_test : public testing::Test {
protected:
  void SetUp() override {
    auto opened = session::open({});
    ASSERT_TRUE(opened) << render(opened.error());
    s = std::move(*opened);
  }

  std::unique_ptr<session> s;
};

TEST_F(moe_train_test, the_layer_learns_the_teacher_and_a_rerun_resumes_from_its_checkpoint) {
  test::temp_dir dir{"moe_train"};
  auto o = small_options(dir.path());
  auto first = train_moe(*s, o);
  ASSERT_TRUE(first) << render(first.error());
  ASSERT_EQ(first->losses.size(), 24u);
  EXPECT_LT(first->losses.back(), 0.5 * first->losses.front());
  EXPECT_EQ(first->restores, 0u);
  uint32_t examples = 0;
  for (auto b : first->expert_batch)
    examples += b;
  EXPECT_EQ(examples, 2u * 32u * 2u) << "k x batch x replicas examples per step";
  o.steps = 30;
  o.prefix = "moe2";
  std::vector<uint64_t> stepped;
  o.on_step = [&](uint64_t step, double) { stepped.push_back(step); };
  auto more = train_moe(*s, o);
  ASSERT_TRUE(more) << render(more.error());
  ASSERT_EQ(more->losses.size(), 30u);
  EXPECT_EQ(stepped.front(), 24u) << "the rerun went on from the checkpoint of step 24";
  for (size_t i = 0; i < 24; ++i)
    EXPECT_EQ(more->losses[i], first->losses[i]) << "the saved history, step " << i;
}

TEST_F(moe_train_test, an_expert_killed_mid_run_is_restored_and_the_run_ends_as_uninterrupted) {
  test::temp_dir plain_dir{"moe_train_plain"};
  auto plain = train_moe(*s, small_options(plain_dir.path()));
  ASSERT_TRUE(plain) << render(plain.error());

  test::temp_dir dir{"moe_train_killed"};
  auto o = small_options(dir.path());
  o.prefix = "moe_killed";
  bool killed = false;
  o.on_step = [&](uint64_t step, double) {
    if (step != 12 || killed)
      return;
    killed = true;
    auto expert = s->lookup("moe_killed.expert.1");
    ASSERT_TRUE(expert) << render(expert.error());
    caf::anon_send_exit(expert->actor, caf::exit_reason::kill);
  };
  std::vector<int64_t> restored_at;
  o.on_restore = [&](int64_t step, const std::string&) { restored_at.push_back(step); };
  auto run = train_moe(*s, o);
  ASSERT_TRUE(run) << render(run.error());
  EXPECT_TRUE(killed);
  ASSERT_GE(run->restores, 1u);
  EXPECT_EQ(restored_at.front(), 10) << "the last checkpoint before step 12";
  ASSERT_EQ(run->losses.size(), plain->losses.size());
  for (size_t i = 0; i < plain->losses.size(); ++i)
    EXPECT_NEAR(run->losses[i], plain->losses[i], 1e-6 * plain->losses[i]) << "step " << i;
}

TEST_F(moe_train_test, bad_options_are_refused_before_anything_starts) {
  struct {
    const char* name;
    void (*change)(moe_train_options&);
  } cases[] = {
    {"k > n", [](moe_train_options& o) { o.layer.gating.k = 9; }},
    {"zero experts", [](moe_train_options& o) { o.layer.gating.experts = 0; }},
    {"zero width", [](moe_train_options& o) { o.layer.dim = 0; }},
    {"no replicas", [](moe_train_options& o) { o.replicas = 0; }},
    {"no checkpoint directory", [](moe_train_options& o) { o.checkpoint_dir.clear(); }},
    {"infinite learning rate",
     [](moe_train_options& o) { o.learning_rate = std::numeric_limits<double>::infinity(); }},
    {"NaN learning rate",
     [](moe_train_options& o) { o.learning_rate = std::numeric_limits<double>::quiet_NaN(); }},
    {"negative learning rate", [](moe_train_options& o) { o.learning_rate = -0.1; }},
  };
  for (auto& c : cases) {
    auto o = small_options("/nonexistent/never-written");
    c.change(o);
    auto run = train_moe(*s, o);
    ASSERT_FALSE(run) << c.name;
    EXPECT_TRUE(is(run.error(), errc::invalid_config)) << c.name << ": " << render(run.error());
  }
}

} // namespace
} // namespace darcy::ops
