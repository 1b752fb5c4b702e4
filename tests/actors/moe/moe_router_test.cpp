// The MoE service with experts as actors: a router over expert actors trains exactly as the
// in-process layer does, whether the batch comes from one replica or is split across two.
#include "actors/moe/moe_router.hpp"

#include <random>

#include <gtest/gtest.h>

#include "actors/moe/expert_actor.hpp"
#include "compute/moe/moe_layer.hpp"
#include "compute/nn/init.hpp"
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

row_block block(uint64_t step, const matrix& m, Eigen::Index first, Eigen::Index rows) {
  auto [values, span] = shared_floats::allocate(static_cast<size_t>(rows * m.cols()));
  Eigen::Map<matrix>{span.data(), rows, m.cols()} = m.middleRows(first, rows);
  return row_block{step, static_cast<uint32_t>(rows), std::move(values)};
}

matrix rows_of(const row_block& b, Eigen::Index cols) {
  return Eigen::Map<const matrix>{b.values.values().data(), b.rows, cols};
}

class moe_router_test : public test::system_fixture {
protected:
  /// A router over freshly spawned expert actors, combining `replicas` replicas.
  moe_router_actor start(uint32_t replicas, const moe_config& cfg = layer_config()) {
    std::vector<expert_actor> experts;
    for (uint32_t e = 0; e < cfg.gating.experts; ++e) {
      experts.push_back(sys.spawn(moe_expert, expert_config{cfg, e, learning_rate}));
      guards.push_back(std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(experts.back())));
    }
    auto router = sys.spawn(moe_router, moe_router_config{cfg, replicas, learning_rate}, experts);
    guards.push_back(std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(router)));
    return router;
  }

  /// Sends one phase of `step` from every replica (rows split evenly, replica order) and
  /// returns the stacked answers.
  caf::expected<matrix> phase(const moe_router_actor& router, bool forward, uint64_t step,
                              const matrix& all, uint32_t replicas) {
    using handle = decltype(self->request(router, test::patience, forward_atom::value,
                                          uint32_t{0}, row_block{}));
    std::vector<handle> handles;
    auto per = all.rows() / replicas;
    // Every replica's request goes out before any answer is awaited: the router answers none
    // until all have arrived.
    for (uint32_t r = 0; r < replicas; ++r) {
      auto b = block(step, all, r * per, per);
      if (forward)
        handles.push_back(self->request(router, test::patience, forward_atom::value, r, b));
      else
        handles.push_back(self->request(router, test::patience, backward_atom::value, r, b));
    }
    std::vector<row_block> answers(replicas);
    caf::error failure;
    for (uint32_t r = 0; r < replicas; ++r)
      handles[r].receive([&](row_block& x) { answers[r] = x; }, [&](caf::error& e) { failure = e; });
    if (failure)
      return failure;
    matrix out(all.rows(), all.cols());
    for (uint32_t r = 0; r < replicas; ++r)
      out.middleRows(r * per, per) = rows_of(answers[r], all.cols());
    return out;
  }

  std::vector<std::unique_ptr<test::stop_on_exit>> guards;
};

TEST_F(moe_router_test, two_replicas_combined_train_like_one_replica_and_like_the_layer) {
  auto cfg = layer_config();
  auto reference = compute::moe::moe_layer<float>::make(cfg);
  ASSERT_TRUE(reference);
  // The in-process twin: one Adam for the gate, one per expert, an expert stepping only when
  // it took examples, as the actors do.
  compute::nn::adam<float> gate_opt{{.learning_rate = learning_rate}};
  std::vector<compute::nn::adam<float>> expert_opts(cfg.gating.experts,
                                                    compute::nn::adam<float>{{.learning_rate = learning_rate}});
  auto one = start(1);
  auto two = start(2);
  std::mt19937_64 rng{1};
  for (uint64_t step = 0; step < 4; ++step) {
    matrix x = compute::nn::normal<float>(16, cfg.dim, 1.0f, rng);
    matrix dy = compute::nn::normal<float>(16, cfg.dim, 1.0f, rng);
    matrix y = (*reference)->forward(x);
    matrix dx = (*reference)->backward(dy);
    gate_opt.step((*reference)->gating().parameters());
    for (uint32_t e = 0; e < cfg.gating.experts; ++e)
      if ((*reference)->plan().expert_batch(e) > 0)
        expert_opts[e].step((*reference)->expert(e).parameters());
    for (auto [router, replicas] : {std::pair{one, 1u}, std::pair{two, 2u}}) {
      auto got_y = phase(router, true, step, x, replicas);
      ASSERT_TRUE(got_y) << render(got_y.error());
      EXPECT_TRUE(got_y->isApprox(y, 1e-5f)) << "step " << step << ", " << replicas << " replicas";
      auto got_dx = phase(router, false, step, dy, replicas);
      ASSERT_TRUE(got_dx) << render(got_dx.error());
      EXPECT_TRUE(got_dx->isApprox(dx, 1e-5f)) << "step " << step << ", " << replicas << " replicas";
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
    {"replica out of range", true, 2, block(0, x, 0, 4), errc::invalid_argument},
    {"wrong width", true, 0, block(0, narrow, 0, 4), errc::dimension_mismatch},
    {"backward without forward", false, 0, block(0, x, 0, 4), errc::invalid_argument},
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
