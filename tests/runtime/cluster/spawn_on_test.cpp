#include "runtime/cluster/spawn_on.hpp"

#include <atomic>
#include <memory>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/node_services.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::runtime {
namespace {

class spawn_on_test : public test::system_fixture {
protected:
  spawn_on_test() {
    node_options opts;
    opts.name = "here";
    services = start_node_services(sys, opts, std::nullopt);
    target = {"here", services.agent};
  }
  ~spawn_on_test() override { services.stop(); }

  node_services services;
  spawn_target target;
};

cluster_status status_of(std::vector<std::pair<std::string, member_state>> members,
                         const caf::actor& agent) {
  cluster_status status;
  for (auto& [name, state] : members)
    status.members.push_back({name, "127.0.0.1", 0, 0, 0, agent, 0, state, ""});
  return status;
}

TEST(preferred_nodes, child_i_prefers_its_own_node_then_the_next_ones_each_once) {
  using list = std::vector<std::string>;
  struct {
    const char* what;
    list nodes;
    size_t child;
    list expected;
  } cases[] = {
    {"no nodes", {}, 3, {}},
    {"its own node first", {"a", "b", "c"}, 1, {"b", "c", "a"}},
    {"more children than nodes wrap around", {"a", "b", "c"}, 4, {"b", "c", "a"}},
    {"a node named twice counts once", {"a", "b", "a"}, 2, {"a", "b"}},
  };
  for (auto& c : cases)
    EXPECT_EQ(preferred_nodes(c.nodes, c.child), c.expected) << c.what;
}

TEST_F(spawn_on_test, LiveTargetsAreTheUpMembersInOrderLimitedToTheNamedOnes) {
  auto agent = caf::actor_cast<caf::actor>(services.agent);
  auto status =
    status_of({{"a", member_state::up}, {"b", member_state::down}, {"c", member_state::up}}, agent);
  struct row {
    std::vector<std::string> only;
    std::vector<std::string> expected;
  } rows[] = {
    {{}, {"a", "c"}},
    {{"c"}, {"c"}},
    {{"b", "c", "a"}, {"a", "c"}},
  };
  for (auto& r : rows) {
    auto targets = live_targets(status, r.only);
    ASSERT_TRUE(targets) << render(targets.error());
    std::vector<std::string> names;
    for (auto& t : *targets)
      names.push_back(t.node);
    EXPECT_EQ(names, r.expected);
  }
  EXPECT_TRUE(is(error_of(live_targets(status, {"b"})), errc::no_live_node));
}

TEST_F(spawn_on_test, GroupSpawnsEveryMemberWithItsArguments) {
  auto workers = spawn_group(
    sys, {target}, test::patience, "test.worker",
    [&](size_t i) { return caf::make_message("w" + std::to_string(i)); }, 3);
  ASSERT_TRUE(workers) << render(workers.error());
  ASSERT_EQ(workers->size(), 3u);
  for (size_t i = 0; i < workers->size(); ++i) {
    auto id = ask<std::string>(sys, (*workers)[i], test::patience, ping_atom::value);
    ASSERT_TRUE(id) << render(id.error());
    EXPECT_EQ(*id, "w" + std::to_string(i));
  }
  for (auto& w : *workers)
    caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
}

TEST_F(spawn_on_test, FailedMemberStopsTheOnesAlreadyStartedAndNamesTheNode) {
  auto before = sys.registry().running();
  auto args = [&](size_t i) {
    if (i < 2)
      return caf::make_message(std::string{"w"});
    return caf::make_message(42);
  };
  auto result = spawn_group(sys, {target}, test::patience, "test.worker", args, 3);
  ASSERT_FALSE(result);
  EXPECT_TRUE(is(result.error(), errc::spawn_failed));
  EXPECT_NE(render(result.error()).find("on node here"), std::string::npos)
    << render(result.error());
  // The two workers that started (and their gates) are stopped: the running count falls back to
  // where it was.
  auto deadline = std::chrono::steady_clock::now() + test::patience;
  while (sys.registry().running() > before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(sys.registry().running(), before);
}

TEST_F(spawn_on_test, ARepeatedRequestIdIsAnsweredWithTheFirstSpawnAndSpawnsNothing) {
  auto before = sys.registry().running();
  auto spawn = [&](uint64_t request) {
    return ask<caf::actor>(sys, services.agent, test::patience, spawn_atom::value,
                           std::string{"test.worker"}, caf::make_message(std::string{"w"}),
                           request);
  };
  auto first = spawn(7), again = spawn(7), other = spawn(9);
  ASSERT_TRUE(first && again && other);
  EXPECT_EQ(*first, *again);
  EXPECT_NE(*first, *other);
  EXPECT_EQ(sys.registry().running(), before + 2);
  // A failed spawn is answered with the same error.
  auto bad = [&] {
    return ask<caf::actor>(sys, services.agent, test::patience, spawn_atom::value,
                           std::string{"no.such.type"}, caf::message{}, uint64_t{11});
  };
  auto e1 = bad(), e2 = bad();
  ASSERT_FALSE(e1);
  ASSERT_FALSE(e2);
  EXPECT_EQ(render(e1.error()), render(e2.error()));
  for (auto& a : {*first, *other})
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

/// An agent in front of the real one that loses the first message it gets, then forwards the
/// second and, after it, the first (a late copy), keeping the late copy's answer.
struct lossy_agent_state {
  std::optional<caf::message> held;
  static inline const char* name = "test.lossy_agent";
};

caf::behavior lossy_agent(caf::stateful_actor<lossy_agent_state>* self, caf::actor agent,
                          std::shared_ptr<std::atomic<caf::actor*>> late_answer) {
  self->set_default_handler(
    [=](caf::scheduled_actor*, caf::message_view& view) -> caf::result<caf::message> {
      auto content = view.move_content_to_message();
      if (!self->state.held) {
        self->state.held = content;
        return caf::delegated<caf::message>{};
      }
      auto promise = self->make_response_promise();
      promise.delegate(agent, std::move(content));
      self->request(agent, caf::infinite, *self->state.held).then([=](caf::actor& a) {
        late_answer->store(new caf::actor(a));
      });
      return caf::delegated<caf::message>{};
    });
  return {[](ping_atom) {}};
}

TEST_F(spawn_on_test, ALostSpawnRequestIsSentAgainAndTheNodeSpawnsOnce) {
  auto before = sys.registry().running();
  auto late = std::make_shared<std::atomic<caf::actor*>>(nullptr);
  auto proxy = sys.spawn(lossy_agent, caf::actor_cast<caf::actor>(services.agent), late);
  test::stop_on_exit guard{sys, proxy};
  spawn_target lossy{"here", caf::actor_cast<node_agent_actor>(proxy)};
  auto actor = spawn_on(sys, lossy, test::patience, "test.worker",
                        caf::make_message(std::string{"w"}), std::chrono::milliseconds(50));
  ASSERT_TRUE(actor) << render(actor.error());
  auto deadline = std::chrono::steady_clock::now() + test::patience;
  while (late->load() == nullptr && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  ASSERT_NE(late->load(), nullptr) << "the late copy was never answered";
  std::unique_ptr<caf::actor> late_actor{late->load()};
  EXPECT_EQ(*late_actor, *actor) << "the late copy spawned another actor";
  EXPECT_EQ(sys.registry().running(), before + 2); // the worker and the lossy agent
  caf::anon_send_exit(*actor, caf::exit_reason::user_shutdown);
}

/// An agent that answers pings (when `pings`) and leaves every other request unanswered.
caf::behavior unanswering_agent(caf::event_based_actor* self, bool pings) {
  self->set_default_handler(
    [](caf::scheduled_actor*, caf::message_view&) -> caf::result<caf::message> {
      return caf::delegated<caf::message>{}; // no one answers
    });
  if (!pings)
    return {[](ping_atom) { return caf::delegated<std::string>{}; }};
  return {[](ping_atom) { return std::string{"deaf"}; }};
}

TEST_F(spawn_on_test, AnUnansweredSpawnSaysWhetherTheNodesAgentStillAnswersAPing) {
  struct silence_case {
    bool pings;
    const char* says;
  };
  for (auto c : {silence_case{true, "its agent answers a ping, so the spawn request was lost"},
                 silence_case{false, "its agent does not answer a ping within 50 ms either"}}) {
    auto agent = sys.spawn(unanswering_agent, c.pings);
    test::stop_on_exit guard{sys, agent};
    spawn_target quiet{"quiet", caf::actor_cast<node_agent_actor>(agent)};
    auto spawned =
      ask<caf::actor>(sys, quiet.agent, std::chrono::milliseconds(50), spawn_atom::value,
                      std::string{"test.worker"}, caf::make_message(std::string{"w"}), uint64_t{1});
    ASSERT_EQ(spawned.error(), caf::sec::request_timeout) << c.says;
    EXPECT_NE(unanswered_spawn(sys, quiet, std::chrono::milliseconds(50)).find(c.says),
              std::string::npos)
      << c.says;
  }
}

} // namespace
} // namespace darcy::runtime
