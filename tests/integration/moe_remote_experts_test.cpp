// Experts as actors on other nodes: expert actors spawned on `darcy node` processes by their
// registered name, a router in this process, two replicas; the layer trains exactly as in
// process, so every block of rows crossed the nodes both ways unchanged. A node of experts
// SIGKILLed mid-training: its experts restart on the surviving node, every expert is restored
// from the last checkpoint, and the run completes as if uninterrupted.
#include <random>

#include "actors/moe/expert_actor.hpp"
#include "actors/moe/moe_router.hpp"
#include "compute/nn/init.hpp"
#include "ops/moe_train.hpp"
#include "runtime/cluster/spawn_on.hpp"
#include "tests/integration/cluster_fixture.hpp"
#include "tests/support/moe_steps.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

class moe_remote_experts : public cluster_test {};

TEST_F(moe_remote_experts, experts_on_a_node_process_train_like_the_layer_in_process) {
  moe_config cfg;
  cfg.dim = 8;
  cfg.expert = expert_kind::linear;
  cfg.gating = {
    .experts = 4, .k = 2, .mask = mask_kind::batchwise, .balance_weight = 0.1, .seed = 9};
  constexpr double learning_rate = 0.01;
  auto a = node("a");
  auto s = connect(a.address, patience);
  auto status = s->status();
  ASSERT_TRUE(status) << render(status.error());
  auto targets = runtime::live_targets(*status, {"a"});
  ASSERT_TRUE(targets) << render(targets.error());
  auto experts = runtime::spawn_group<expert_actor>(
    s->system(), *targets, patience, actors::expert_state::name,
    [&](size_t e) {
      return caf::make_message(expert_config{cfg, static_cast<uint32_t>(e), learning_rate});
    },
    cfg.gating.experts);
  ASSERT_TRUE(experts) << render(experts.error());
  auto router =
    s->system().spawn(actors::moe_router, moe_router_config{cfg, 2, learning_rate}, *experts);
  stop_on_exit guard{s->system(), caf::actor_cast<caf::actor>(router)};
  caf::scoped_actor self{s->system()};
  moe_twin twin{cfg, learning_rate};
  std::mt19937_64 rng{2};
  for (uint64_t step = 0; step < 3; ++step) {
    moe_matrix x = compute::nn::normal<float>(20, cfg.dim, 1.0f, rng);
    moe_matrix dy = compute::nn::normal<float>(20, cfg.dim, 1.0f, rng);
    auto [y, dx] = twin.step(x, dy);
    auto got_y = router_phase(self, router, true, step, x, 2);
    ASSERT_TRUE(got_y) << render(got_y.error());
    EXPECT_TRUE(got_y->isApprox(y, 1e-5f)) << "step " << step;
    auto got_dx = router_phase(self, router, false, step, dy, 2);
    ASSERT_TRUE(got_dx) << render(got_dx.error());
    EXPECT_TRUE(got_dx->isApprox(dx, 1e-5f)) << "step " << step;
  }
  for (auto& e : *experts)
    caf::anon_send_exit(e, caf::exit_reason::user_shutdown);
}

TEST_F(moe_remote_experts, an_expert_node_killed_mid_training_is_restored_and_the_run_completes) {
  auto a = node("a");
  auto b = node("b", runtime::to_string(a.address));
  auto s = connect(a.address, patience);
  caf::scoped_actor self{s->system()};
  subscribe(self, *s);
  auto status = s->status();
  ASSERT_TRUE(status) << render(status.error());
  if (!runtime::live_targets(*status, {"b"})) {
    ASSERT_TRUE(await_event(self, patience,
                            [](const cluster_event& e) {
                              return e.kind == cluster_event_kind::member_up && e.node == "b";
                            }))
      << "b never joined";
  }
  test::temp_dir dir{"moe_node_kill"};
  ops::moe_train_options o;
  o.layer.dim = 8;
  o.layer.gating = {
    .experts = 4, .k = 2, .mask = mask_kind::batchwise, .balance_weight = 0.01, .seed = 3};
  o.batch = 32;
  o.steps = 20;
  o.learning_rate = 0.03;
  o.checkpoint_every = 5;
  o.expert_nodes = {"a", "b"};
  o.checkpoint_dir = dir.path() + "/uninterrupted";
  o.prefix = "moe_plain";
  auto plain = ops::train_moe(*s, o);
  ASSERT_TRUE(plain) << render(plain.error());
  EXPECT_EQ(plain->expert_nodes, (std::vector<std::string>{"a", "b", "a", "b"}));

  o.checkpoint_dir = dir.path() + "/killed";
  o.prefix = "moe_killed";
  o.on_step = [&](uint64_t step, double) {
    if (step == 12)
      b.process.signal(SIGKILL);
  };
  std::vector<int64_t> restored_at;
  o.on_restore = [&](int64_t step, const std::string&) { restored_at.push_back(step); };
  auto killed = ops::train_moe(*s, o);
  ASSERT_TRUE(killed) << render(killed.error());
  ASSERT_GE(killed->restores, 1u);
  EXPECT_EQ(restored_at.front(), 10) << "the last checkpoint before the kill";
  EXPECT_EQ(killed->expert_nodes, (std::vector<std::string>(4, "a")))
    << "the checkpoint of experts on two nodes restored onto one";
  ASSERT_EQ(killed->losses.size(), plain->losses.size());
  for (size_t i = 0; i < plain->losses.size(); ++i)
    EXPECT_NEAR(killed->losses[i], plain->losses[i], 1e-5 * plain->losses[i]) << "step " << i;
}

} // namespace
} // namespace darcy::test
