// Membership with real `darcy node` processes: a stopped member is given up at once and, when it
// resumes, re-admitted under a new incarnation with its old actors fenced; members rejoin a
// restarted seed; a live name cannot be taken twice; down members are forgotten.
#include <csignal>

#include "tests/integration/cluster_fixture.hpp"

namespace darcy::test {
namespace {

const member_info* find_member(const cluster_status& status, const std::string& name) {
  for (auto& m : status.members)
    if (m.name == name)
      return &m;
  return nullptr;
}

// Asks the registry for its status until `pred` holds, for at most `deadline`.
template <class Pred>
bool await_status(ops::session& s, std::chrono::milliseconds deadline, Pred pred) {
  caf::scoped_actor self{s.system()};
  auto until = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < until) {
    if (auto status = s.status(); status && pred(*status))
      return true;
    self->receive(caf::after(std::chrono::milliseconds(50)) >> [] {});
  }
  return false;
}

TEST_F(cluster_test, StoppedMemberIsReplacedAtOnceAndFencedWhenItResumes) {
  auto [a, b, c] = start_three();
  auto s = connect(a.address);
  caf::scoped_actor self{s->system()};
  subscribe(self, *s);
  supervise_echo_on_b(self, *s, a.address);
  auto old_echo = s->lookup("echo");
  ASSERT_TRUE(old_echo);
  self->monitor(old_echo->actor);
  auto before = s->status();
  ASSERT_TRUE(before && find_member(*before, "b"));
  auto old_incarnation = find_member(*before, "b")->incarnation;

  // A stopped process keeps its TCP connection: only the missed heartbeats tell.
  b.process.signal(SIGSTOP);
  ASSERT_TRUE(await_event(self, patience, [](const cluster_event& e) {
    return e.kind == cluster_event_kind::member_down && e.node == "b";
  }));
  ASSERT_TRUE(await_event(self, patience, [](const cluster_event& e) {
    return e.kind == cluster_event_kind::service_up && e.service == "echo" && e.node == "c";
  })) << "the supervisor did not replace the child of the stopped member";
  EXPECT_EQ(echo_node(*s, "while stopped"), "c");

  b.process.signal(SIGCONT);
  uint64_t new_incarnation = 0;
  ASSERT_TRUE(await_event(self, patience, [&](const cluster_event& e) {
    if (e.kind != cluster_event_kind::member_up || e.node != "b")
      return false;
    new_incarnation = e.incarnation;
    return true;
  })) << "the resumed member was not re-admitted";
  EXPECT_GT(new_incarnation, old_incarnation);
  // The old incarnation's echo is stopped, not left running beside its replacement.
  bool fenced = false;
  self->receive([&](const caf::down_msg& msg) { fenced = msg.source == old_echo->actor.address(); },
                caf::after(patience) >> [] {});
  EXPECT_TRUE(fenced);
  EXPECT_EQ(echo_node(*s, "after"), "c");
  auto after = s->status();
  ASSERT_TRUE(after && find_member(*after, "b"));
  EXPECT_EQ(find_member(*after, "b")->state, member_state::up);
}

TEST_F(cluster_test, MembersRejoinARestartedSeedAndALiveNameCannotBeTakenTwice) {
  auto seed = node("seed");
  auto where = runtime::to_string(seed.address);
  auto b = node("b", where);
  auto c = node("c", where);
  seed.process.signal(SIGKILL);
  seed.process.wait(patience);
  auto again = runtime::launch_node({DARCY_BINARY, "node", "--name", "seed", "--listen", where,
                                     "--config", config_, "--prune-after-ms", "500"},
                                    patience);
  ASSERT_TRUE(again) << render(again.error());
  auto s = connect(again->address);
  EXPECT_TRUE(await_status(*s, patience, [](const cluster_status& st) {
    auto mb = find_member(st, "b");
    auto mc = find_member(st, "c");
    return mb && mc && mb->state == member_state::up && mc->state == member_state::up;
  })) << "b and c did not rejoin the restarted seed";

  auto impostor = start_node("b", where, {"--config", config_});
  ASSERT_FALSE(impostor) << "a second node took the live name b";
  EXPECT_NE(render(impostor.error()).find("name already in use"), std::string::npos)
    << render(impostor.error());

  c.process.signal(SIGKILL);
  EXPECT_TRUE(await_status(*s, patience, [](const cluster_status& st) {
    return find_member(st, "c") == nullptr;
  })) << "the dead member c was not forgotten after --prune-after-ms";
  auto status = s->status();
  ASSERT_TRUE(status && find_member(*status, "b"));
  EXPECT_EQ(find_member(*status, "b")->state, member_state::up);
}

} // namespace
} // namespace darcy::test
