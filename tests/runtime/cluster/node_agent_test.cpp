// runtime/node_agent: what one agent answers in its own process: ping, echo and its registry;
// spawns by type name, a retried spawn answered without a second spawn, refusals that name the
// type and the node; and chaos commands, which need the node's gates.
#include "runtime/cluster/node_agent.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/registry.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::runtime {
namespace {

class node_agent_test : public test::system_fixture {
protected:
  ~node_agent_test() override {
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }

  node_agent_actor start(node_agent_options o) {
    auto agent = sys.spawn(node_agent, std::move(o));
    spawned.push_back(caf::actor_cast<caf::actor>(agent));
    return agent;
  }

  caf::expected<caf::actor> spawn_on(const node_agent_actor& agent, const std::string& type,
                                     const std::string& id) {
    return ask<caf::actor>(sys, agent, test::patience, spawn_atom::value, type,
                           caf::make_message(id));
  }

  std::vector<caf::actor> spawned;
};

TEST_F(node_agent_test, answers_ping_echo_and_its_registry_or_that_it_has_none) {
  auto lone = start({.name = "lone"});
  EXPECT_EQ(ask<std::string>(sys, lone, test::patience, ping_atom::value),
            caf::expected<std::string>{"lone"});
  EXPECT_EQ(ask<std::string>(sys, lone, test::patience, echo_atom::value, std::string{"abc"}),
            caf::expected<std::string>{"abc"});
  auto none = ask<registry_actor>(sys, lone, test::patience, registry_atom::value);
  ASSERT_FALSE(none);
  EXPECT_TRUE(is(none.error(), errc::not_found)) << render(none.error());

  auto reg = sys.spawn(registry, registry_options{"seed"});
  spawned.push_back(caf::actor_cast<caf::actor>(reg));
  auto seed = start({.name = "seed", .registry = reg});
  EXPECT_EQ(ask<registry_actor>(sys, seed, test::patience, registry_atom::value),
            caf::expected<registry_actor>{reg});
}

TEST_F(node_agent_test, spawns_by_type_name_and_names_the_type_and_node_it_cannot_spawn) {
  auto agent = start({.name = "n1"});
  auto worker = spawn_on(agent, "test.worker", "w1");
  ASSERT_TRUE(worker) << render(worker.error());
  EXPECT_EQ(ask<std::string>(sys, *worker, test::patience, ping_atom::value),
            caf::expected<std::string>{"w1"});
  auto unknown = spawn_on(agent, "no.such.type", "x");
  ASSERT_FALSE(unknown);
  EXPECT_TRUE(is(unknown.error(), errc::spawn_failed)) << render(unknown.error());
  EXPECT_NE(render(unknown.error()).find("'no.such.type' on node n1"), std::string::npos)
    << render(unknown.error());
  // What an agent spawned stops with it.
  self->monitor(*worker);
  caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
  auto down = next<caf::down_msg>();
  ASSERT_TRUE(down);
  EXPECT_EQ(down->source, worker->address());
}

// spawn_on sends each spawn with a request id and asks again when no answer came in time: the
// agent answers a repeated id with the first answer, so a slow first spawn and its retry make
// one actor, not two.
TEST_F(node_agent_test, a_spawn_asked_again_with_its_request_id_spawns_once) {
  auto agent = start({.name = "n1"});
  auto ask_spawn = [&](const std::string& id, uint64_t request) {
    return ask<caf::actor>(sys, agent, test::patience, spawn_atom::value,
                           std::string{"test.worker"}, caf::make_message(id), request);
  };
  auto first = ask_spawn("first", 7);
  auto again = ask_spawn("second", 7);
  auto other = ask_spawn("third", 8);
  ASSERT_TRUE(first && again && other);
  EXPECT_EQ(*first, *again);
  EXPECT_NE(*first, *other);
  EXPECT_EQ(ask<std::string>(sys, *again, test::patience, ping_atom::value),
            caf::expected<std::string>{"first"});
  // A failed spawn is remembered as failed.
  auto bad = ask<caf::actor>(sys, agent, test::patience, spawn_atom::value,
                             std::string{"no.such.type"}, caf::make_message(), uint64_t{9});
  auto bad_again =
    ask<caf::actor>(sys, agent, test::patience, spawn_atom::value, std::string{"test.worker"},
                    caf::make_message(std::string{"y"}), uint64_t{9});
  EXPECT_FALSE(bad);
  EXPECT_FALSE(bad_again);
}

TEST_F(node_agent_test, chaos_commands_need_the_nodes_gates_and_a_gate_it_spawned) {
  chaos_command stats{chaos_op::stats, {}};
  auto plain = start({.name = "plain"});
  auto refused = ask<chaos_stats>(sys, plain, test::patience, stats, caf::actor{});
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::not_found));
  EXPECT_NE(render(refused.error()).find("--chaos"), std::string::npos) << render(refused.error());

  auto gated = start({.name = "gated", .chaos_gates = true});
  auto gate = spawn_on(gated, "test.worker", "behind");
  ASSERT_TRUE(gate) << render(gate.error());
  // The handle is the gate's: messages through it reach the worker.
  EXPECT_EQ(ask<std::string>(sys, *gate, test::patience, ping_atom::value),
            caf::expected<std::string>{"behind"});
  auto counted = ask<chaos_stats>(sys, gated, test::patience, stats, *gate);
  ASSERT_TRUE(counted) << render(counted.error());
  EXPECT_GE(counted->forwarded, 1u);
  auto stranger = sys.spawn(test::test_worker, std::string{"stranger"});
  spawned.push_back(stranger);
  auto unknown = ask<chaos_stats>(sys, gated, test::patience, stats, stranger);
  ASSERT_FALSE(unknown);
  EXPECT_NE(render(unknown.error()).find("did not spawn that actor"), std::string::npos)
    << render(unknown.error());
  // With no gate named, the command is for every gate of the node.
  auto every = ask<chaos_stats>(sys, gated, test::patience, stats, caf::actor{});
  ASSERT_TRUE(every) << render(every.error());
  EXPECT_EQ(every->forwarded, counted->forwarded);
}

} // namespace
} // namespace darcy::runtime
