// Membership with real `darcy node` processes, driven through darcy_testing's local_cluster: a
// stopped member is given up at once and, when it resumes, re-admitted under a new incarnation
// with its old actors fenced; members rejoin a restarted seed; a live name cannot be taken
// twice; down members are forgotten.
#include "ops/testing/local_cluster.hpp"
#include "tests/integration/cluster_fixture.hpp"

namespace darcy::test {
namespace {

using testing::local_cluster;
using testing::state_of;

const member_info* find_member(const cluster_status& status, const std::string& name) {
  for (auto& m : status.members)
    if (m.name == name)
      return &m;
  return nullptr;
}

std::unique_ptr<local_cluster> three_nodes() {
  auto c = local_cluster::start({.nodes = 3, .binary = DARCY_BINARY, .chaos = true});
  if (!c) {
    ADD_FAILURE() << render(c.error());
    std::abort();
  }
  return std::move(*c);
}

TEST_F(cluster_test, StoppedMemberIsReplacedAtOnceAndFencedWhenItResumes) {
  auto c = three_nodes();
  auto s = connect(c->seed());
  caf::scoped_actor self{s->system()};
  subscribe(self, *s);
  supervise_echo_on(self, *s, c->seed(), "node-1", "node-2");
  auto old_echo = s->lookup("echo");
  ASSERT_TRUE(old_echo);
  self->monitor(old_echo->actor);
  auto before = c->status();
  ASSERT_TRUE(before && find_member(*before, "node-1"));
  auto old_incarnation = find_member(*before, "node-1")->incarnation;

  // A stopped process keeps its TCP connection: only the missed heartbeats tell.
  ASSERT_FALSE(c->pause(1));
  ASSERT_TRUE(await_event(self, patience, [](const cluster_event& e) {
    return e.kind == cluster_event_kind::member_down && e.node == "node-1";
  }));
  ASSERT_TRUE(await_event(self, patience,
                          [](const cluster_event& e) {
                            return e.kind == cluster_event_kind::service_up &&
                                   e.service == "echo" && e.node == "node-2";
                          }))
    << "the supervisor did not replace the child of the stopped member";
  EXPECT_EQ(echo_node(*s, "while stopped"), "node-2");

  ASSERT_FALSE(c->resume(1));
  uint64_t new_incarnation = 0;
  ASSERT_TRUE(await_event(self, patience,
                          [&](const cluster_event& e) {
                            if (e.kind != cluster_event_kind::member_up || e.node != "node-1")
                              return false;
                            new_incarnation = e.incarnation;
                            return true;
                          }))
    << "the resumed member was not re-admitted";
  EXPECT_GT(new_incarnation, old_incarnation);
  // The old incarnation's echo is stopped, not left running beside its replacement.
  bool fenced = false;
  self->receive([&](const caf::down_msg& msg) { fenced = msg.source == old_echo->actor.address(); },
                caf::after(patience) >> [] {});
  EXPECT_TRUE(fenced);
  EXPECT_EQ(echo_node(*s, "after"), "node-2");
  auto after = c->status();
  ASSERT_TRUE(after);
  EXPECT_EQ(state_of(*after, "node-1"), member_state::up);
}

TEST_F(cluster_test, MembersRejoinARestartedSeedAndALiveNameCannotBeTakenTwice) {
  auto c = three_nodes();
  ASSERT_FALSE(c->kill(0));
  ASSERT_FALSE(c->restart(0, {"--prune-after-ms", "500"}));
  EXPECT_FALSE(c->wait_for(
    [](const cluster_status& st) {
      return state_of(st, "node-1") == member_state::up &&
             state_of(st, "node-2") == member_state::up;
    },
    patience))
    << "node-1 and node-2 did not rejoin the restarted seed";

  auto impostor = c->add_node("node-1");
  ASSERT_FALSE(impostor) << "a second node took the live name node-1";
  EXPECT_NE(render(impostor.error()).find("name already in use"), std::string::npos)
    << render(impostor.error());

  ASSERT_FALSE(c->kill(2));
  EXPECT_FALSE(
    c->wait_for([](const cluster_status& st) { return !state_of(st, "node-2"); }, patience))
    << "the dead member node-2 was not forgotten after --prune-after-ms";
  auto status = c->status();
  ASSERT_TRUE(status);
  EXPECT_EQ(state_of(*status, "node-1"), member_state::up);
}

} // namespace
} // namespace darcy::test
