#include "runtime/spawn_on.hpp"

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

TEST_F(spawn_on_test, LiveTargetsAreTheUpMembersInOrderLimitedToTheNamedOnes) {
  auto agent = caf::actor_cast<caf::actor>(services.agent);
  auto status = status_of({{"a", member_state::up}, {"b", member_state::down},
                           {"c", member_state::up}},
                          agent);
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
  // The two workers that started (and their gates) are stopped: the running count falls back to where it was.
  auto deadline = std::chrono::steady_clock::now() + test::patience;
  while (sys.registry().running() > before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(sys.registry().running(), before);
}

} // namespace
} // namespace darcy::runtime
