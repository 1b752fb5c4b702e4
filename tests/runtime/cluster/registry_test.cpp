#include "runtime/cluster/registry.hpp"

#include "runtime/ask.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::runtime {
namespace {

class registry_test : public test::system_fixture {
protected:
  registry_actor spawn_registry(std::chrono::milliseconds timeout = std::chrono::hours(1),
                                std::chrono::milliseconds prune_after = std::chrono::hours(1)) {
    auto reg = sys.spawn(
      registry, registry_options{"seed", std::chrono::milliseconds(10), timeout, prune_after});
    self->send(reg, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
    return reg;
  }

  caf::actor spawn_agent(const std::string& id) { return sys.spawn(test::test_worker, id); }

  caf::expected<cluster_status> join(const registry_actor& reg, const std::string& name,
                                     const caf::actor& agent) {
    member_info info;
    info.name = name;
    info.host = "127.0.0.1";
    info.agent = agent;
    return ask<cluster_status>(sys, reg, test::patience, join_atom::value, info);
  }

  cluster_event expect_event(cluster_event_kind kind) {
    auto e = next<cluster_event>();
    if (!e)
      return {};
    EXPECT_EQ(to_string(e->kind), to_string(kind)) << e->node << " " << e->service;
    return *e;
  }
};

TEST_F(registry_test, JoinLookupAndLeave) {
  auto reg = spawn_registry();
  auto a = spawn_agent("a");
  auto b = spawn_agent("b");
  ASSERT_TRUE(join(reg, "a", a));
  auto joined = join(reg, "b", b);
  ASSERT_TRUE(joined) << render(joined.error());
  EXPECT_EQ(joined->members.size(), 2u);
  EXPECT_EQ(expect_event(cluster_event_kind::member_up).node, "a");
  EXPECT_EQ(expect_event(cluster_event_kind::member_up).node, "b");

  auto svc = spawn_agent("svc");
  ASSERT_TRUE(
    ask<ok_atom>(sys, reg, test::patience, register_atom::value, service_info{"svc", "b", svc}));
  expect_event(cluster_event_kind::service_up);
  auto found = ask<service_info>(sys, reg, test::patience, lookup_atom::value, std::string{"svc"});
  ASSERT_TRUE(found) << render(found.error());
  EXPECT_EQ(found->node, "b");
  EXPECT_EQ(found->actor, svc);

  ASSERT_TRUE(ask<ok_atom>(sys, reg, test::patience, leave_atom::value, std::string{"b"}));
  EXPECT_EQ(expect_event(cluster_event_kind::service_down).service, "svc");
  EXPECT_EQ(expect_event(cluster_event_kind::member_left).node, "b");
  auto gone = ask<service_info>(sys, reg, test::patience, lookup_atom::value, std::string{"svc"});
  ASSERT_FALSE(gone);
  EXPECT_EQ(error_of(gone), make_error(errc::unknown_service, "svc"));
  auto status = ask<cluster_status>(sys, reg, test::patience, status_atom::value);
  ASSERT_TRUE(status);
  ASSERT_EQ(status->members.size(), 2u);
  EXPECT_EQ(status->members[1].state, member_state::left);
}

TEST_F(registry_test, LookupOfUnknownServiceFailsWithUnknownService) {
  auto reg = spawn_registry();
  auto result =
    ask<service_info>(sys, reg, test::patience, lookup_atom::value, std::string{"nope"});
  ASSERT_FALSE(result);
  EXPECT_TRUE(is(error_of(result), errc::unknown_service));
  EXPECT_EQ(render(result.error()), "unknown service: nope");
}

TEST_F(registry_test, LiveNameCannotBeTakenByAnotherAgent) {
  auto reg = spawn_registry();
  ASSERT_TRUE(join(reg, "a", spawn_agent("a1")));
  auto again = join(reg, "a", spawn_agent("a2"));
  ASSERT_FALSE(again);
  EXPECT_TRUE(is(again.error(), errc::duplicate_node)) << render(again.error());
}

TEST_F(registry_test, MemberWhoseAgentDiesIsDownAndLosesItsServices) {
  auto reg = spawn_registry();
  auto agent = spawn_agent("a");
  ASSERT_TRUE(join(reg, "a", agent));
  expect_event(cluster_event_kind::member_up);
  ASSERT_TRUE(ask<ok_atom>(sys, reg, test::patience, register_atom::value,
                           service_info{"svc", "a", spawn_agent("svc")}));
  expect_event(cluster_event_kind::service_up);
  self->send_exit(agent, caf::exit_reason::kill);
  EXPECT_EQ(expect_event(cluster_event_kind::service_down).service, "svc");
  auto down = expect_event(cluster_event_kind::member_down);
  EXPECT_EQ(down.node, "a");
  EXPECT_NE(down.reason.find("connection lost"), std::string::npos) << down.reason;
  // A member that is down may join again under the same name.
  EXPECT_TRUE(join(reg, "a", spawn_agent("a-again")));
}

TEST_F(registry_test, MemberWithoutHeartbeatsIsDownAfterTheTimeout) {
  auto reg = spawn_registry(std::chrono::milliseconds(50));
  ASSERT_TRUE(join(reg, "quiet", spawn_agent("quiet")));
  expect_event(cluster_event_kind::member_up);
  auto down = expect_event(cluster_event_kind::member_down);
  EXPECT_EQ(down.node, "quiet");
  EXPECT_NE(down.reason.find("no heartbeat"), std::string::npos) << down.reason;
}

TEST_F(registry_test, SilentMemberHeardFromAgainIsReadmittedUnderANewIncarnation) {
  auto reg = spawn_registry(std::chrono::milliseconds(50));
  ASSERT_TRUE(join(reg, "quiet", spawn_agent("quiet")));
  auto up = expect_event(cluster_event_kind::member_up);
  ASSERT_GT(up.incarnation, 0u);
  auto down = expect_event(cluster_event_kind::member_down);
  EXPECT_EQ(down.incarnation, up.incarnation);
  // While down, the member's services are refused: its old incarnation is fenced.
  auto fenced = ask<ok_atom>(sys, reg, test::patience, register_atom::value,
                             service_info{"svc", "quiet", spawn_agent("svc")});
  ASSERT_FALSE(fenced);
  EXPECT_TRUE(is(error_of(fenced), errc::node_unreachable)) << render(fenced.error());
  auto answer = ask<uint64_t>(sys, reg, test::patience, heartbeat_atom::value, std::string{"quiet"},
                              up.incarnation);
  ASSERT_TRUE(answer) << render(answer.error());
  EXPECT_GT(*answer, up.incarnation);
  auto again = expect_event(cluster_event_kind::member_up);
  EXPECT_EQ(again.incarnation, *answer);
  EXPECT_NE(again.reason.find("no heartbeat"), std::string::npos) << again.reason;
  auto status = ask<cluster_status>(sys, reg, test::patience, status_atom::value);
  ASSERT_TRUE(status);
  ASSERT_EQ(status->members.size(), 1u);
  EXPECT_EQ(status->members[0].state, member_state::up);
}

TEST_F(registry_test, HeartbeatOfAnUnknownOrDepartedNameAsksItToJoinAgain) {
  auto reg = spawn_registry();
  ASSERT_TRUE(join(reg, "gone", spawn_agent("gone")));
  ASSERT_TRUE(ask<ok_atom>(sys, reg, test::patience, leave_atom::value, std::string{"gone"}));
  for (std::string name : {"never-joined", "gone"}) {
    auto answer = ask<uint64_t>(sys, reg, test::patience, heartbeat_atom::value, name, uint64_t{1});
    ASSERT_FALSE(answer) << name;
    EXPECT_TRUE(is(error_of(answer), errc::unknown_node)) << render(answer.error());
  }
}

TEST_F(registry_test, DownMemberIsForgottenAfterTheGracePeriod) {
  auto reg = spawn_registry(std::chrono::milliseconds(30), std::chrono::milliseconds(1));
  ASSERT_TRUE(join(reg, "brief", spawn_agent("brief")));
  expect_event(cluster_event_kind::member_up);
  expect_event(cluster_event_kind::member_down);
  // Pruning runs on the registry's next ticks; status is answered between them.
  bool forgotten = false;
  for (int i = 0; i < 2000 && !forgotten; ++i) {
    auto status = ask<cluster_status>(sys, reg, test::patience, status_atom::value);
    ASSERT_TRUE(status);
    forgotten = status->members.empty();
  }
  EXPECT_TRUE(forgotten);
  // Its name is free again, under a higher incarnation.
  ASSERT_TRUE(join(reg, "brief", spawn_agent("brief-2")));
}

TEST_F(registry_test, ServiceIsRemovedWhenItsActorExitsAndReplacedOnReregister) {
  auto reg = spawn_registry();
  auto first = spawn_agent("first");
  ASSERT_TRUE(
    ask<ok_atom>(sys, reg, test::patience, register_atom::value, service_info{"svc", "n", first}));
  expect_event(cluster_event_kind::service_up);
  self->send_exit(first, caf::exit_reason::kill);
  expect_event(cluster_event_kind::service_down);
  auto second = spawn_agent("second");
  ASSERT_TRUE(
    ask<ok_atom>(sys, reg, test::patience, register_atom::value, service_info{"svc", "n", second}));
  auto found = ask<service_info>(sys, reg, test::patience, lookup_atom::value, std::string{"svc"});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->actor, second);
}

TEST_F(registry_test, InvalidJoinAndRegisterAreRefused) {
  auto reg = spawn_registry();
  auto bad_join = join(reg, "", spawn_agent("x"));
  ASSERT_FALSE(bad_join);
  EXPECT_TRUE(is(error_of(bad_join), errc::invalid_argument));
  auto bad_reg = ask<ok_atom>(sys, reg, test::patience, register_atom::value,
                              service_info{"svc", "n", caf::actor{}});
  ASSERT_FALSE(bad_reg);
  EXPECT_TRUE(is(error_of(bad_reg), errc::invalid_argument));
}

} // namespace
} // namespace darcy::runtime
