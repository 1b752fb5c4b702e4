// The parameter servers' client over a link that drops and delays messages: with an attempt
// timeout it sends again what went unanswered, and the servers still apply each push exactly
// once, so the variables end bit for bit as over a perfect link.
#include "ops/estimator/parameter_servers.hpp"

#include <gtest/gtest.h>

#include "actors/estimator/parameter_server.hpp"
#include "messages/error.hpp"
#include "runtime/cluster/chaos.hpp"
#include "tests/support/random_matrix.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::ops::estimator {
namespace {

constexpr double learning_rate = 0.05;
constexpr uint64_t pushes = 40;

class parameter_servers_test : public test::system_fixture {
protected:
  /// A server, and its guard.
  parameter_server_actor spawn_server() {
    auto server =
      sys.spawn(actors::parameter_server, ps_config{0, compute::adam_optimizer(learning_rate)});
    guards_.push_back(
      std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(server)));
    return server;
  }

  /// Loads the server through `client` with fresh variables, pushes `pushes` seeded gradients
  /// with a pull before each, and puts the values the server ends with into `out`.
  void train(parameter_servers& client, std::vector<compute::nn::matrix>& out) {
    compute::nn::parameter<float> a{"a", test::gaussian_matrix(3, 2, 1)};
    compute::nn::parameter<float> b{"b", test::gaussian_matrix(1, 4, 2)};
    variable_list vars{&a, &b};
    compute::nn::optimizer opt{compute::adam_optimizer(learning_rate)};
    EXPECT_FALSE(client.initialize(vars, opt, 0));
    for (uint64_t i = 0; i < pushes; ++i) {
      auto pulled = client.pull(vars);
      EXPECT_TRUE(pulled) << render(pulled.error());
      a.grad = test::gaussian_matrix(3, 2, 100 + i);
      b.grad = test::gaussian_matrix(1, 4, 200 + i);
      auto step = client.push(vars, double(i + 1));
      ASSERT_TRUE(step) << render(step.error());
      EXPECT_EQ(*step, i + 1);
    }
    EXPECT_TRUE(client.pull(vars));
    out = {a.value, b.value};
    // Each step's loss is counted once, however often its push arrived.
    auto losses = client.losses();
    ASSERT_TRUE(losses) << render(losses.error());
    EXPECT_EQ(losses->count, pushes);
    EXPECT_DOUBLE_EQ(losses->sum, double(pushes * (pushes + 1) / 2));
  }

private:
  std::vector<std::unique_ptr<test::stop_on_exit>> guards_;
};

TEST_F(parameter_servers_test, pushes_over_a_lossy_link_are_sent_again_and_applied_once) {
  parameter_servers perfect{sys, {spawn_server()}, test::patience};
  std::vector<compute::nn::matrix> expected, got;
  ASSERT_NO_FATAL_FAILURE(train(perfect, expected));

  // Delays (30 ms) outlast the attempt timeout (10 ms): the late copy of a push arrives after
  // its retry was applied, and must not be applied again.
  auto server = spawn_server();
  auto gate = sys.spawn(runtime::chaos_gate, caf::actor_cast<caf::actor>(server),
                        disruption{.drop = 0.2, .delay = 0.3, .delay_ms = 30, .seed = 3});
  parameter_servers lossy{sys,
                          {caf::actor_cast<parameter_server_actor>(gate)},
                          test::patience,
                          std::chrono::milliseconds(10)};
  ASSERT_NO_FATAL_FAILURE(train(lossy, got));
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(got[i] == expected[i]) << "variable " << i << " differs";
  auto step = lossy.global_step();
  ASSERT_TRUE(step) << render(step.error());
  EXPECT_EQ(*step, pushes) << "each push applied once";

  chaos_stats seen;
  self->request(gate, test::patience, chaos_command{chaos_op::stats, {}})
    .receive([&](chaos_stats& s) { seen = s; }, [](caf::error& err) { FAIL() << render(err); });
  EXPECT_GT(seen.dropped, 0u) << "the link dropped nothing: the test proves no retry";
  EXPECT_GT(seen.delayed, 0u) << "the link delayed nothing: the test proves no deduplication";
}

TEST_F(parameter_servers_test, without_an_attempt_timeout_a_dropped_request_is_a_timeout) {
  auto server = spawn_server();
  auto gate = sys.spawn(runtime::chaos_gate, caf::actor_cast<caf::actor>(server),
                        disruption{.drop = 1.0, .seed = 1});
  parameter_servers client{
    sys, {caf::actor_cast<parameter_server_actor>(gate)}, std::chrono::milliseconds(50)};
  compute::nn::parameter<float> a{"a", test::gaussian_matrix(3, 2, 1)};
  auto step = client.pull({&a});
  ASSERT_FALSE(step);
  EXPECT_EQ(step.error(), caf::sec::request_timeout) << render(step.error());
}

TEST_F(parameter_servers_test, a_user_placement_puts_each_variable_on_its_server) {
  std::vector<parameter_server_actor> servers{spawn_server(), spawn_server()};
  parameter_servers client{sys, servers, test::patience};
  // Everything on server 1: server 0 holds nothing and still counts the steps.
  client.set_placement(
    [](const variable_list& vars, uint32_t) { return std::vector<uint32_t>(vars.size(), 1); });
  compute::nn::parameter<float> a{"a", test::gaussian_matrix(3, 2, 1)};
  compute::nn::parameter<float> b{"b", test::gaussian_matrix(1, 4, 2)};
  variable_list vars{&a, &b};
  compute::nn::optimizer opt{compute::adam_optimizer(learning_rate)};
  ASSERT_FALSE(client.initialize(vars, opt, 0));
  std::vector<std::vector<std::string>> held;
  for (auto& server : servers)
    self->request(server, test::patience, fetch_atom::value)
      .receive([&](named_tensors& t, uint64_t) { held.push_back(t.names); },
               [](caf::error& err) { FAIL() << render(err); });
  ASSERT_EQ(held.size(), 2u);
  EXPECT_TRUE(held[0].empty());
  EXPECT_EQ(held[1], (std::vector<std::string>{"a", "b"}));
  // A push and a pull go through the placement: the values move by the step.
  compute::nn::matrix before = a.value;
  a.grad.setOnes();
  b.grad.setOnes();
  auto step = client.push(vars, 1.0);
  ASSERT_TRUE(step) << render(step.error());
  ASSERT_TRUE(client.pull(vars));
  EXPECT_FALSE(a.value.isApprox(before));
  // A placement that names no server fails the call and sends nothing.
  client.set_placement(
    [](const variable_list& vars, uint32_t) { return std::vector<uint32_t>(vars.size(), 7); });
  auto refused = client.pull(vars);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::invalid_config)) << render(refused.error());
}

} // namespace
} // namespace darcy::ops::estimator
