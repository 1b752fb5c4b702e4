// runtime/membership: an agent's side of membership against a real registry in this process,
// with the clocks in the test's hands (both heartbeat periods are an hour; the test sends the
// ticks). A node declared down and re-admitted, or forgotten and joined again, stops the
// actors of its old incarnation; one whose heartbeats keep arriving stays under its first.
#include "runtime/cluster/membership.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/registry.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::runtime {
namespace {

using namespace std::chrono_literals;

class membership_test : public test::system_fixture {
protected:
  ~membership_test() override {
    for (auto a : {caf::actor_cast<caf::actor>(agent), caf::actor_cast<caf::actor>(reg)})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }

  /// A registry that declares a member down at the first tick after its last heartbeat and,
  /// when `forget`, forgets it at the tick after that; an agent "a" joined through it, which
  /// spawned one test worker (monitored by the test).
  void start(bool forget) {
    reg = sys.spawn(registry, registry_options{"seed", 1h, 0ms, forget ? 0ms : 1h});
    agent = sys.spawn(node_agent,
                      node_agent_options{.name = "a", .registry = reg, .heartbeat_interval = 1h});
    member_info info;
    info.name = "a";
    info.host = "127.0.0.1";
    info.agent = caf::actor_cast<caf::actor>(agent);
    auto joined = ask<cluster_status>(sys, agent, test::patience, join_atom::value, info);
    ASSERT_TRUE(joined) << render(joined.error());
    first = incarnation();
    ASSERT_GT(first, 0u);
    auto w = ask<caf::actor>(sys, agent, test::patience, spawn_atom::value,
                             std::string{"test.worker"}, caf::make_message(std::string{"w"}));
    ASSERT_TRUE(w) << render(w.error());
    worker = *w;
    self->monitor(worker);
  }

  /// The registry's incarnation of "a" once every message sent so far was handled; 0 when it
  /// is not an up member.
  uint64_t incarnation() {
    auto st = ask<cluster_status>(sys, reg, test::patience, status_atom::value);
    EXPECT_TRUE(st) << render(st.error());
    for (auto& m : st ? st->members : std::vector<member_info>{})
      if (m.name == "a" && m.state == member_state::up)
        return m.incarnation;
    return 0;
  }

  /// One heartbeat of the agent, handled by the registry, and the agent's answer to it.
  void heartbeat() {
    self->send(agent, tick_atom::value);
    // The agent's reply handling is done once it answers a later message of ours.
    ASSERT_TRUE(ask<std::string>(sys, agent, test::patience, ping_atom::value));
  }

  /// Waits for the registry to hold "a" up under an incarnation other than `first`.
  uint64_t readmitted() {
    for (int i = 0; i < 1000; ++i) {
      auto now = incarnation();
      if (now != 0 && now != first)
        return now;
      if (!ask<std::string>(sys, agent, test::patience, ping_atom::value))
        break; // the agent is gone
    }
    ADD_FAILURE() << "a was not re-admitted";
    return 0;
  }

  /// The worker's exit: its reason, or none within the test's patience.
  std::optional<caf::error> worker_exit() {
    auto down = next<caf::down_msg>();
    if (!down)
      return std::nullopt;
    EXPECT_EQ(down->source, worker.address());
    return down->reason;
  }

  registry_actor reg;
  node_agent_actor agent;
  caf::actor worker;
  uint64_t first = 0;
};

TEST_F(membership_test, heartbeats_keep_a_member_up_under_its_first_incarnation) {
  start(false);
  for (int i = 0; i < 3; ++i) {
    heartbeat();
    EXPECT_EQ(incarnation(), first);
  }
  EXPECT_EQ(ask<std::string>(sys, worker, test::patience, ping_atom::value),
            caf::expected<std::string>{"w"});
}

TEST_F(membership_test, a_member_declared_down_and_readmitted_stops_its_old_actors) {
  start(false);
  self->send(reg, tick_atom::value); // no heartbeat since the join: down
  EXPECT_EQ(incarnation(), 0u);
  heartbeat(); // heard from again: re-admitted under a new incarnation, which fences
  auto second = readmitted();
  EXPECT_GT(second, first);
  auto reason = worker_exit();
  ASSERT_TRUE(reason) << "the old incarnation's worker still runs";
  EXPECT_TRUE(is(*reason, errc::node_unreachable)) << render(*reason);
  EXPECT_NE(render(*reason).find("fenced"), std::string::npos) << render(*reason);
}

TEST_F(membership_test, a_member_the_registry_forgot_joins_again_and_stops_its_old_actors) {
  start(true);
  self->send(reg, tick_atom::value); // down
  self->send(reg, tick_atom::value); // forgotten
  EXPECT_EQ(incarnation(), 0u);
  heartbeat(); // unknown to the registry: the agent joins again
  EXPECT_GT(readmitted(), first);
  auto reason = worker_exit();
  ASSERT_TRUE(reason) << "the worker of the forgotten incarnation still runs";
  EXPECT_TRUE(is(*reason, errc::node_unreachable)) << render(*reason);
}

} // namespace
} // namespace darcy::runtime
