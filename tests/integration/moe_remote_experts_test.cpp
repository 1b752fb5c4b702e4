// Experts as actors on another node: expert actors spawned on a `darcy node` process by their
// registered name, a router in this process, two replicas; the layer trains exactly as in
// process, so every block of rows crossed the nodes both ways unchanged.
#include <random>

#include "actors/moe/expert_actor.hpp"
#include "actors/moe/moe_router.hpp"
#include "compute/nn/init.hpp"
#include "runtime/spawn_on.hpp"
#include "tests/integration/cluster_fixture.hpp"
#include "tests/support/moe_steps.hpp"

namespace darcy::test {
namespace {

class moe_remote_experts : public cluster_test {};

TEST_F(moe_remote_experts, experts_on_a_node_process_train_like_the_layer_in_process) {
  moe_config cfg;
  cfg.dim = 8;
  cfg.expert = expert_kind::linear;
  cfg.gating = {.experts = 4, .k = 2, .mask = mask_kind::batchwise, .balance_weight = 0.1,
                .seed = 9};
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
  auto router = s->system().spawn(actors::moe_router, moe_router_config{cfg, 2, learning_rate},
                                  *experts);
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

} // namespace
} // namespace darcy::test
