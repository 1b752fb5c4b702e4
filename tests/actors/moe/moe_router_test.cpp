// The MoE service with experts as actors: a router over expert actors trains exactly as the
// in-process layer does, whether the batch comes from one replica or is split across two.
#include "actors/moe/moe_router.hpp"

#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "actors/moe/expert_actor.hpp"
#include "compute/moe/hierarchical_moe.hpp"
#include "compute/nn/init.hpp"
#include "runtime/cluster/chaos.hpp"
#include "tests/support/moe_steps.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using compute::nn::matrix;

constexpr double learning_rate = 0.01;

moe_config layer_config() {
  moe_config cfg;
  cfg.dim = 6;
  cfg.expert = expert_kind::ffn;
  cfg.hidden = 5;
  cfg.gating = {.experts = 4, .k = 2, .importance_weight = 0.1, .seed = 3};
  return cfg;
}

class moe_router_test : public test::system_fixture {
protected:
  /// A router over freshly spawned expert actors, combining `replicas` replicas.
  moe_router_actor start(uint32_t replicas, const moe_config& cfg = layer_config()) {
    std::vector<expert_actor> experts;
    for (uint32_t e = 0; e < cfg.gating.experts; ++e) {
      experts.push_back(sys.spawn(moe_expert, expert_config{cfg, e, learning_rate}));
      guards.push_back(
        std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(experts.back())));
    }
    auto router = sys.spawn(moe_router, moe_router_config{cfg, replicas, learning_rate}, experts);
    guards.push_back(
      std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(router)));
    return router;
  }

  /// A primary router over one router per group, as hierarchical_moe seeds its groups.
  moe_router_actor start_hierarchy(const gating_config& primary, const moe_config& group,
                                   uint32_t replicas) {
    std::vector<expert_actor> groups;
    for (uint32_t g = 0; g < primary.experts; ++g) {
      auto cfg = group;
      cfg.gating.seed = group.gating.seed + g;
      groups.push_back(expert_actor{start(1, cfg)});
    }
    moe_config top = group;
    top.gating = primary;
    auto root = sys.spawn(moe_router, moe_router_config{top, replicas, learning_rate}, groups);
    guards.push_back(std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(root)));
    return root;
  }

  std::vector<std::unique_ptr<test::stop_on_exit>> guards;
};

TEST_F(moe_router_test, two_replicas_combined_train_like_one_replica_and_like_the_layer) {
  auto cfg = layer_config();
  test::moe_twin twin{cfg, learning_rate};
  auto one = start(1);
  auto two = start(2);
  std::mt19937_64 rng{1};
  for (uint64_t step = 0; step < 4; ++step) {
    matrix x = compute::nn::normal<float>(16, cfg.dim, 1.0f, rng);
    matrix dy = compute::nn::normal<float>(16, cfg.dim, 1.0f, rng);
    auto [y, dx] = twin.step(x, dy);
    for (auto [router, replicas] : {std::pair{one, 1u}, std::pair{two, 2u}}) {
      auto got_y = test::router_phase(self, router, true, step, x, replicas);
      ASSERT_TRUE(got_y) << render(got_y.error());
      EXPECT_TRUE(got_y->isApprox(y, 1e-5f)) << "step " << step << ", " << replicas << " replicas";
      auto got_dx = test::router_phase(self, router, false, step, dy, replicas);
      ASSERT_TRUE(got_dx) << render(got_dx.error());
      EXPECT_TRUE(got_dx->isApprox(dx, 1e-5f))
        << "step " << step << ", " << replicas << " replicas";
    }
  }
  self->request(two, test::patience, status_atom::value)
    .receive(
      [&](moe_router_status& s) {
        EXPECT_EQ(s.steps, 4u);
        uint32_t total = 0;
        for (auto b : s.expert_batch)
          total += b;
        EXPECT_EQ(total, 16u * cfg.gating.k) << "the experts saw both replicas' examples";
      },
      [](caf::error& e) { FAIL() << render(e); });
}

TEST_F(moe_router_test, bad_requests_get_their_own_errors) {
  auto router = start(2);
  matrix x = matrix::Ones(4, layer_config().dim);
  matrix narrow = matrix::Ones(4, 3);
  struct {
    const char* name;
    bool forward;
    uint32_t replica;
    row_block b;
    errc expected;
  } cases[] = {
    {"replica out of range", true, 2, test::moe_block(0, x, 0, 4), errc::invalid_argument},
    {"wrong width", true, 0, test::moe_block(0, narrow, 0, 4), errc::dimension_mismatch},
    {"backward without forward", false, 0, test::moe_block(0, x, 0, 4), errc::invalid_argument},
  };
  for (auto& c : cases) {
    caf::error err;
    auto on_error = [&](caf::error& e) { err = e; };
    if (c.forward)
      self->request(router, test::patience, forward_atom::value, c.replica, c.b)
        .receive([](row_block&) {}, on_error);
    else
      self->request(router, test::patience, backward_atom::value, c.replica, c.b)
        .receive([](row_block&) {}, on_error);
    EXPECT_TRUE(is(err, c.expected)) << c.name << ": " << render(err);
  }
}

TEST_F(moe_router_test, a_nan_block_is_refused_and_the_step_completes_with_a_good_one) {
  auto cfg = layer_config();
  test::moe_twin twin{cfg, learning_rate};
  auto router = start(1);
  std::mt19937_64 rng{4};
  matrix x = compute::nn::normal<float>(8, cfg.dim, 1.0f, rng);
  matrix dy = compute::nn::normal<float>(8, cfg.dim, 1.0f, rng);
  auto [y, dx] = twin.step(x, dy);
  for (bool forward : {true, false}) {
    matrix bad = forward ? x : dy;
    bad(3, 2) = std::numeric_limits<float>::quiet_NaN();
    auto refused = test::router_phase(self, router, forward, 0, bad, 1);
    ASSERT_FALSE(refused);
    EXPECT_TRUE(is(refused.error(), errc::non_finite)) << render(refused.error());
    auto good = test::router_phase(self, router, forward, 0, forward ? x : dy, 1);
    ASSERT_TRUE(good) << render(good.error());
    EXPECT_TRUE(good->isApprox(forward ? y : dx, 1e-5f)) << "forward " << forward;
  }
}

/// `count` pairs of 12 random inputs and output gradients.
std::vector<std::pair<matrix, matrix>> random_batches(int count, uint32_t dim, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::vector<std::pair<matrix, matrix>> batches;
  for (int i = 0; i < count; ++i) {
    matrix x = compute::nn::normal<float>(12, dim, 1.0f, rng);
    batches.emplace_back(x, compute::nn::normal<float>(12, dim, 1.0f, rng));
  }
  return batches;
}

/// One training step through `router` (one replica): its y and dx.
std::pair<matrix, matrix> train_step(caf::scoped_actor& self, const moe_router_actor& router,
                                     uint64_t step, const matrix& x, const matrix& dy) {
  auto y = test::router_phase(self, router, true, step, x, 1);
  EXPECT_TRUE(y) << render(y.error());
  auto dx = test::router_phase(self, router, false, step, dy, 1);
  EXPECT_TRUE(dx) << render(dx.error());
  return {y ? *y : matrix{}, dx ? *dx : matrix{}};
}

// Experts behind chaos gates that drop 30% of the messages sent to them (seeded): the router
// asks again what was not answered, the experts apply a repeated backward once, and the layer
// trains exactly as the in-process one.
TEST_F(moe_router_test, lost_expert_messages_are_asked_again_and_applied_once) {
  auto cfg = layer_config();
  test::moe_twin twin{cfg, learning_rate};
  std::vector<expert_actor> gates;
  uint64_t gate_seed = 11;
  for (uint32_t e = 0; e < cfg.gating.experts; ++e) {
    auto expert = sys.spawn(moe_expert, expert_config{cfg, e, learning_rate});
    guards.push_back(
      std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(expert)));
    disruption plan{.drop = 0.3, .seed = gate_seed++};
    gates.push_back(caf::actor_cast<expert_actor>(
      sys.spawn(runtime::chaos_gate, caf::actor_cast<caf::actor>(expert), plan)));
  }
  auto router = sys.spawn(moe_router,
                          moe_router_config{cfg, 1, learning_rate, /*expert_attempts=*/20,
                                            /*expert_attempt_ms=*/20},
                          gates);
  guards.push_back(std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(router)));
  std::mt19937_64 rng{6};
  for (uint64_t step = 0; step < 5; ++step) {
    matrix x = compute::nn::normal<float>(12, cfg.dim, 1.0f, rng);
    matrix dy = compute::nn::normal<float>(12, cfg.dim, 1.0f, rng);
    auto [y, dx] = twin.step(x, dy);
    auto [got_y, got_dx] = train_step(self, router, step, x, dy);
    EXPECT_TRUE(got_y.isApprox(y, 1e-5f)) << "step " << step;
    EXPECT_TRUE(got_dx.isApprox(dx, 1e-5f)) << "step " << step;
  }
  uint64_t dropped = 0;
  for (auto& g : gates)
    self
      ->request(caf::actor_cast<caf::actor>(g), test::patience, chaos_command{chaos_op::stats, {}})
      .receive([&](chaos_stats& st) { dropped += st.dropped; },
               [](caf::error& e) { FAIL() << render(e); });
  EXPECT_GT(dropped, 0u) << "no message was lost: the test proves nothing";
}

caf::expected<checkpoint_manifest> ask_checkpoint(caf::scoped_actor& self,
                                                  const moe_router_actor& router, bool save,
                                                  const std::string& root, int64_t step = 0) {
  caf::expected<checkpoint_manifest> result = caf::error{};
  auto on_reply = [&](checkpoint_manifest& m) { result = std::move(m); };
  auto on_error = [&](caf::error& e) { result = std::move(e); };
  if (save)
    self->request(router, test::patience, save_atom::value, moe_save_request{root, step, 2, "at"})
      .receive(on_reply, on_error);
  else
    self->request(router, test::patience, load_atom::value, root).receive(on_reply, on_error);
  return result;
}

TEST_F(moe_router_test, a_checkpoint_restored_into_new_actors_trains_on_as_if_uninterrupted) {
  auto cfg = layer_config();
  test::temp_dir dir{"moe_router_ckpt"};
  auto first = start(1);
  auto batches = random_batches(4, cfg.dim, 5);
  for (uint64_t step = 0; step < 2; ++step)
    train_step(self, first, step, batches[step].first, batches[step].second);
  auto saved = ask_checkpoint(self, first, true, dir.path(), 2);
  ASSERT_TRUE(saved) << render(saved.error());
  EXPECT_EQ(saved->parts.size(), cfg.gating.experts + 1u);
  std::vector<std::pair<matrix, matrix>> expected;
  for (uint64_t step = 2; step < 4; ++step)
    expected.push_back(train_step(self, first, step, batches[step].first, batches[step].second));

  auto fresh = start(1);
  auto untrained = train_step(self, fresh, 2, batches[2].first, batches[2].second);
  EXPECT_FALSE(untrained.first.isApprox(expected[0].first, 1e-3f))
    << "the check below could not tell a restored layer from a fresh one";
  auto restored = start(1);
  auto loaded = ask_checkpoint(self, restored, false, dir.path());
  ASSERT_TRUE(loaded) << render(loaded.error());
  EXPECT_EQ(loaded->step, 2);
  EXPECT_EQ(loaded->extra, "at");
  for (uint64_t step = 2; step < 4; ++step) {
    auto [y, dx] = train_step(self, restored, step, batches[step].first, batches[step].second);
    EXPECT_TRUE(y.isApprox(expected[step - 2].first, 1e-6f)) << "step " << step;
    EXPECT_TRUE(dx.isApprox(expected[step - 2].second, 1e-6f)) << "step " << step;
  }
}

TEST_F(moe_router_test, checkpoint_requests_that_cannot_hold_fail_with_their_own_errors) {
  auto cfg = layer_config();
  test::temp_dir dir{"moe_router_ckpt_errors"};
  auto router = start(1);
  auto none = ask_checkpoint(self, router, false, dir.path());
  ASSERT_FALSE(none);
  EXPECT_TRUE(is(none.error(), errc::not_found)) << render(none.error());
  ASSERT_TRUE(ask_checkpoint(self, router, true, dir.path()));
  auto wider = cfg;
  wider.gating.experts = 6;
  auto other = start(1, wider);
  auto refused = ask_checkpoint(self, other, false, dir.path());
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::invalid_config)) << render(refused.error());
  matrix x = matrix::Ones(4, cfg.dim);
  ASSERT_TRUE(test::router_phase(self, router, true, 0, x, 1));
  auto mid_step = ask_checkpoint(self, router, true, dir.path());
  ASSERT_FALSE(mid_step);
  EXPECT_TRUE(is(mid_step.error(), errc::invalid_argument)) << render(mid_step.error());
}

TEST_F(moe_router_test, bad_configs_stop_the_router_and_the_expert_with_a_clear_error) {
  auto cfg = layer_config();
  cfg.gating.k = 9;
  auto expert = sys.spawn(moe_expert, expert_config{cfg, 0, learning_rate});
  auto router = sys.spawn(moe_router, moe_router_config{layer_config(), 1, learning_rate},
                          std::vector<expert_actor>{});
  for (auto actor : {caf::actor_cast<caf::actor>(expert), caf::actor_cast<caf::actor>(router)}) {
    self->monitor(actor);
    auto down = next<caf::down_msg>();
    ASSERT_TRUE(down);
    EXPECT_TRUE(is(down->reason, errc::invalid_config)) << render(down->reason);
  }
}

} // namespace
} // namespace darcy::actors

namespace darcy::actors {
namespace {

TEST_F(moe_router_test, a_hierarchy_of_routers_trains_like_the_hierarchical_layer) {
  // 2 groups of 3 linear experts; the primary gate picks 1 group, each group 2 experts.
  gating_config primary{.experts = 2, .k = 1, .balance_weight = 0.1, .seed = 1};
  moe_config group;
  group.dim = 5;
  group.gating = {.experts = 3, .k = 2, .importance_weight = 0.1, .seed = 7};
  auto reference = compute::moe::hierarchical_moe<float>::make(primary, group);
  ASSERT_TRUE(reference) << render(reference.error());
  auto root = start_hierarchy(primary, group, 2);
  // The twin's optimizers: the primary gate every step; a group's gate and experts only in
  // steps where they took examples.
  auto& tree = **reference;
  compute::nn::optimizer primary_opt{compute::adam_optimizer(learning_rate)};
  std::vector<compute::nn::optimizer> group_opts(
    2, compute::nn::optimizer{compute::adam_optimizer(learning_rate)});
  std::vector<std::vector<compute::nn::optimizer>> expert_opts(
    2, std::vector<compute::nn::optimizer>(
         3, compute::nn::optimizer{compute::adam_optimizer(learning_rate)}));
  std::mt19937_64 rng{6};
  for (uint64_t step = 0; step < 3; ++step) {
    matrix x = compute::nn::normal<float>(12, group.dim, 1.0f, rng);
    matrix dy = compute::nn::normal<float>(12, group.dim, 1.0f, rng);
    matrix y = tree.forward(x);
    matrix dx = tree.backward(dy);
    primary_opt.step(tree.primary().parameters());
    for (uint32_t g = 0; g < 2; ++g) {
      if (tree.plan().expert_batch(g) == 0)
        continue;
      group_opts[g].step(tree.group(g).gating().parameters());
      for (uint32_t e = 0; e < 3; ++e)
        if (tree.group(g).plan().expert_batch(e) > 0)
          expert_opts[g][e].step(tree.group(g).expert(e).parameters());
    }
    auto got_y = test::router_phase(self, root, true, step, x, 2);
    ASSERT_TRUE(got_y) << render(got_y.error());
    EXPECT_TRUE(got_y->isApprox(y, 1e-5f)) << "step " << step;
    auto got_dx = test::router_phase(self, root, false, step, dy, 2);
    ASSERT_TRUE(got_dx) << render(got_dx.error());
    EXPECT_TRUE(got_dx->isApprox(dx, 1e-5f)) << "step " << step;
  }
}

TEST_F(moe_router_test, a_hierarchy_checkpoint_restores_every_group_and_trains_on_unchanged) {
  gating_config primary{.experts = 2, .k = 1, .balance_weight = 0.1, .seed = 1};
  moe_config group;
  group.dim = 5;
  group.gating = {.experts = 3, .k = 2, .importance_weight = 0.1, .seed = 7};
  test::temp_dir dir{"moe_hierarchy_ckpt"};
  auto first = start_hierarchy(primary, group, 1);
  auto batches = random_batches(4, group.dim, 8);
  for (uint64_t step = 0; step < 2; ++step)
    train_step(self, first, step, batches[step].first, batches[step].second);
  auto saved = ask_checkpoint(self, first, true, dir.path(), 2);
  ASSERT_TRUE(saved) << render(saved.error());
  ASSERT_EQ(saved->parts.size(), 3u) << "one index part per group, then the primary gate";
  std::vector<std::pair<matrix, matrix>> expected;
  for (uint64_t step = 2; step < 4; ++step)
    expected.push_back(train_step(self, first, step, batches[step].first, batches[step].second));
  auto restored = start_hierarchy(primary, group, 1);
  auto loaded = ask_checkpoint(self, restored, false, dir.path());
  ASSERT_TRUE(loaded) << render(loaded.error());
  for (uint64_t step = 2; step < 4; ++step) {
    auto [y, dx] = train_step(self, restored, step, batches[step].first, batches[step].second);
    EXPECT_TRUE(y.isApprox(expected[step - 2].first, 1e-6f)) << "step " << step;
    EXPECT_TRUE(dx.isApprox(expected[step - 2].second, 1e-6f)) << "step " << step;
  }
}

} // namespace
} // namespace darcy::actors
