#include "runtime/cluster/chaos.hpp"

#include "runtime/ask.hpp"
#include "runtime/cluster/spawn_on.hpp"
#include "runtime/node_services.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::runtime {
namespace {

using get_atom = caf::atom_constant<caf::atom("get")>;

// Records the integers it receives; answers get with them and echoes strings.
caf::behavior recorder(caf::stateful_actor<std::vector<int>>* self) {
  return {
    [self](int x) { self->state.push_back(x); },
    [self](get_atom) { return self->state; },
    [](echo_atom, std::string& s) { return std::move(s); },
  };
}

class chaos_test : public test::system_fixture {
protected:
  chaos_stats command(const caf::actor& gate, chaos_op op, disruption plan = {}) {
    auto stats = ask<chaos_stats>(sys, gate, test::patience, chaos_command{op, plan});
    EXPECT_TRUE(stats) << render(stats.error());
    return stats ? *stats : chaos_stats{};
  }

  std::vector<int> received_by(const caf::actor& target) {
    auto xs = ask<std::vector<int>>(sys, target, test::patience, get_atom::value);
    EXPECT_TRUE(xs) << render(xs.error());
    return xs ? *xs : std::vector<int>{};
  }

  // Sends 0..n-1 through a gate with `plan`; returns what reached the target, in order.
  std::vector<int> relay(const disruption& plan, int n, chaos_stats* stats = nullptr) {
    auto target = sys.spawn(recorder);
    auto gate = sys.spawn(chaos_gate, target, plan);
    for (int i = 0; i < n; ++i)
      self->send(gate, i);
    auto counted = command(gate, chaos_op::stats);
    if (stats)
      *stats = counted;
    return received_by(target);
  }

  caf::error echo_through(const caf::actor& gate, std::chrono::milliseconds timeout) {
    caf::error failure;
    self->request(gate, timeout, echo_atom::value, std::string{"hi"})
      .receive([](std::string& s) { EXPECT_EQ(s, "hi"); }, [&](caf::error& err) { failure = err; });
    return failure;
  }
};

TEST_F(chaos_test, DropsASeededFractionAndForwardsTheRestInOrder) {
  chaos_stats stats;
  auto received = relay({0.4, 0, 0, 42}, 500, &stats);
  EXPECT_EQ(stats.forwarded + stats.dropped, 500u);
  EXPECT_EQ(received.size(), stats.forwarded);
  EXPECT_GT(stats.dropped, 150u);
  EXPECT_LT(stats.dropped, 250u);
  EXPECT_TRUE(std::is_sorted(received.begin(), received.end()));
}

TEST_F(chaos_test, SameSeedDropsTheSameMessages) {
  auto first = relay({0.3, 0, 0, 7}, 300);
  auto second = relay({0.3, 0, 0, 7}, 300);
  auto other = relay({0.3, 0, 0, 8}, 300);
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other);
}

TEST_F(chaos_test, GateWithoutAPlanForwardsEverything) {
  chaos_stats stats;
  auto received = relay({}, 200, &stats);
  EXPECT_EQ(received.size(), 200u);
  EXPECT_EQ(stats.forwarded, 200u);
}

TEST_F(chaos_test, DelayedRequestStillGetsItsResponse) {
  auto gate = sys.spawn(chaos_gate, sys.spawn(recorder), disruption{0, 1.0, 5, 1});
  EXPECT_FALSE(echo_through(gate, test::patience));
  auto stats = command(gate, chaos_op::stats);
  EXPECT_EQ(stats.delayed, 1u);
  EXPECT_EQ(stats.forwarded, 1u);
}

TEST_F(chaos_test, DroppedRequestNeverGetsAResponse) {
  auto gate = sys.spawn(chaos_gate, sys.spawn(recorder), disruption{1.0, 0, 0, 1});
  EXPECT_EQ(echo_through(gate, std::chrono::milliseconds(100)), caf::sec::request_timeout);
}

TEST_F(chaos_test, DisruptThenHealChangesARunningGateAndReportsWhatTheDisruptionDid) {
  auto target = sys.spawn(recorder);
  auto gate = sys.spawn(chaos_gate, target, disruption{});
  self->send(gate, 1);
  EXPECT_EQ(command(gate, chaos_op::disrupt, {1.0, 0, 0, 3}).forwarded, 1u);
  self->send(gate, 2);
  self->send(gate, 3);
  auto healed = command(gate, chaos_op::heal);
  EXPECT_EQ(healed.dropped, 2u);
  EXPECT_EQ(healed.forwarded, 0u);
  self->send(gate, 4);
  // Asked through the gate, so that 4 has reached the target first.
  EXPECT_EQ(received_by(gate), (std::vector<int>{1, 4}));
}

TEST_F(chaos_test, BadPlanIsRefusedAndTheGateKeepsForwarding) {
  auto target = sys.spawn(recorder);
  auto gate = sys.spawn(chaos_gate, target, disruption{});
  auto refused =
    ask<chaos_stats>(sys, gate, test::patience, chaos_command{chaos_op::disrupt, {1.5, 0, 0, 1}});
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::invalid_argument)) << render(refused.error());
  EXPECT_FALSE(echo_through(gate, test::patience));
}

TEST_F(chaos_test, GateAndTargetEndTogether) {
  enum class how { target_stops, target_crashes, exit_to_target, exit_to_gate };
  struct row {
    const char* name;
    how what;
    caf::exit_reason reason;
  } rows[] = {
    {"target exits normally", how::target_stops, caf::exit_reason::normal},
    {"target crashes", how::target_crashes, caf::exit_reason::normal},
    {"target is killed", how::exit_to_target, caf::exit_reason::kill},
    {"gate is killed (fencing)", how::exit_to_gate, caf::exit_reason::kill},
    {"gate is shut down", how::exit_to_gate, caf::exit_reason::user_shutdown},
  };
  for (auto& r : rows) {
    auto target = sys.spawn(test::test_worker, std::string{"t"});
    auto gate = sys.spawn(chaos_gate, target, disruption{});
    self->monitor(target);
    self->monitor(gate);
    switch (r.what) {
      case how::target_stops:
        self->send(target, stop_atom::value);
        break;
      case how::target_crashes:
        self->send(target, crash_atom::value);
        break;
      case how::exit_to_target:
        self->send_exit(target, r.reason);
        break;
      case how::exit_to_gate:
        self->send_exit(gate, r.reason);
        break;
    }
    int downs = 0;
    for (int i = 0; i < 2; ++i)
      self->receive([&](caf::down_msg&) { ++downs; },
                    caf::after(test::patience) >> [&] { ADD_FAILURE() << r.name; });
    EXPECT_EQ(downs, 2) << r.name;
  }
}

TEST_F(chaos_test, NodeAgentCommandsOnlyTheGatesOfWhatItSpawned) {
  node_options opts;
  opts.name = "here";
  opts.chaos = true;
  auto services = start_node_services(sys, opts, std::nullopt);
  auto worker = spawn_on(sys, {"here", services.agent}, test::patience, "test.worker",
                         caf::make_message(std::string{"w"}));
  ASSERT_TRUE(worker) << render(worker.error());
  auto via_agent = [&](chaos_op op, disruption plan, const caf::actor& gate) {
    return ask<chaos_stats>(sys, services.agent, test::patience, chaos_command{op, plan}, gate);
  };
  ASSERT_TRUE(via_agent(chaos_op::disrupt, {1.0, 0, 0, 1}, *worker));
  auto ping = [&](std::chrono::milliseconds timeout) {
    caf::error failure;
    self->request(*worker, timeout, ping_atom::value)
      .receive([](std::string&) {}, [&](caf::error& err) { failure = err; });
    return failure;
  };
  EXPECT_EQ(ping(std::chrono::milliseconds(100)), caf::sec::request_timeout);
  auto healed = via_agent(chaos_op::heal, {}, *worker);
  ASSERT_TRUE(healed) << render(healed.error());
  EXPECT_EQ(healed->dropped, 1u);
  EXPECT_FALSE(ping(test::patience));
  auto stranger = via_agent(chaos_op::stats, {}, sys.spawn(recorder));
  ASSERT_FALSE(stranger);
  EXPECT_TRUE(is(stranger.error(), errc::not_found)) << render(stranger.error());
  caf::anon_send_exit(*worker, caf::exit_reason::user_shutdown);
  services.stop();
}

TEST_F(chaos_test, NodeWithoutChaosGatesRefusesCommandsNamingTheFlag) {
  node_options opts;
  opts.name = "plain";
  auto services = start_node_services(sys, opts, std::nullopt);
  auto worker = spawn_on(sys, {"plain", services.agent}, test::patience, "test.worker",
                         caf::make_message(std::string{"w"}));
  ASSERT_TRUE(worker) << render(worker.error());
  auto refused = ask<chaos_stats>(sys, services.agent, test::patience,
                                  chaos_command{chaos_op::disrupt, {1.0, 0, 0, 1}}, *worker);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::not_found)) << render(refused.error());
  EXPECT_NE(render(refused.error()).find("--chaos"), std::string::npos) << render(refused.error());
  EXPECT_EQ(public_handle(*worker), *worker);
  caf::anon_send_exit(*worker, caf::exit_reason::user_shutdown);
  services.stop();
}

TEST(chaos_validate, RejectsFractionsOutsideTheUnitInterval) {
  struct row {
    disruption plan;
    bool ok;
  } rows[] = {
    {{0, 0, 0, 1}, true},    {{1, 1, 10, 1}, true}, {{-0.1, 0, 0, 1}, false},
    {{1.5, 0, 0, 1}, false}, {{0, 2, 0, 1}, false}, {{0, 0.5, -1, 1}, false},
  };
  for (auto& r : rows)
    EXPECT_EQ(!validate(r.plan), r.ok) << r.plan.drop << " " << r.plan.delay;
}

} // namespace
} // namespace darcy::runtime
