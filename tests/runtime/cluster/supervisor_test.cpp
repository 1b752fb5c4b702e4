#include "runtime/cluster/supervisor.hpp"

#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "tests/support/test_system.hpp"

namespace darcy::runtime {
namespace {

using test::system_fixture;

child_spec worker(const std::string& id, restart_type restart = restart_type::permanent) {
  return {id, "test.worker", caf::make_message(id), {}, restart, {}};
}

supervisor_spec make_spec(restart_strategy strategy, std::vector<child_spec> children,
                          uint32_t intensity = 10) {
  return {"sup", strategy, intensity, 60000, std::move(children)};
}

class supervisor_test : public system_fixture {
protected:
  // Spawns the supervisor, subscribes, and waits until `expected_children` have started.
  supervisor_actor start(supervisor_spec spec, size_t expected_children) {
    auto sup = sys.spawn(supervisor, std::move(spec));
    self->send(sup, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
    for (size_t i = 0; i < expected_children; ++i) {
      auto e = next<supervisor_event>();
      EXPECT_TRUE(e && e->kind == supervisor_event_kind::child_started);
    }
    return sup;
  }

  std::map<std::string, child_info> children(const supervisor_actor& sup) {
    std::map<std::string, child_info> result;
    self->request(sup, test::patience, children_atom::value)
      .receive(
        [&](std::vector<child_info>& xs) {
          for (auto& x : xs)
            result[x.id] = x;
        },
        [](caf::error& err) { ADD_FAILURE() << render(err); });
    return result;
  }

  supervisor_event expect_event(supervisor_event_kind kind) {
    auto e = next<supervisor_event>();
    if (!e)
      return {};
    EXPECT_EQ(to_string(e->kind), to_string(kind)) << "child " << e->child << ": " << e->reason;
    return *e;
  }
};

struct strategy_case {
  const char* name;
  restart_strategy strategy;
  std::set<std::string> restarted;
};

class strategy_test : public supervisor_test,
                      public ::testing::WithParamInterface<strategy_case> {};

TEST_P(strategy_test, CrashOfMiddleChildRestartsExactlyTheStrategysGroup) {
  auto& param = GetParam();
  auto sup = start(make_spec(param.strategy, {worker("a"), worker("b"), worker("c")}), 3);
  auto before = children(sup);
  self->send(before["b"].actor, crash_atom::value);
  expect_event(supervisor_event_kind::child_exited);
  std::vector<std::string> order;
  for (size_t i = 0; i < param.restarted.size(); ++i)
    order.push_back(expect_event(supervisor_event_kind::child_restarted).child);
  auto after = children(sup);
  for (auto& id : {"a", "b", "c"}) {
    bool restarted = param.restarted.count(id) > 0;
    ASSERT_TRUE(after[id].actor) << id;
    EXPECT_EQ(after[id].actor != before[id].actor, restarted) << id;
    EXPECT_EQ(after[id].restarts, restarted ? 1u : 0u) << id;
  }
  // Restarts happen in start order.
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
}

INSTANTIATE_TEST_SUITE_P(
  strategies, strategy_test,
  ::testing::Values(strategy_case{"one_for_one", restart_strategy::one_for_one, {"b"}},
                    strategy_case{"one_for_all", restart_strategy::one_for_all, {"a", "b", "c"}},
                    strategy_case{"rest_for_one", restart_strategy::rest_for_one, {"b", "c"}}),
  [](const auto& info) { return std::string{info.param.name}; });

struct restart_case {
  const char* name;
  restart_type restart;
  bool crash;
  bool restarted;
};

class restart_type_test : public supervisor_test,
                          public ::testing::WithParamInterface<restart_case> {};

TEST_P(restart_type_test, ChildIsRestartedOnlyWhenItsRestartTypeSaysSo) {
  auto& param = GetParam();
  auto sup = start(make_spec(restart_strategy::one_for_one, {worker("w", param.restart)}), 1);
  auto before = children(sup);
  if (param.crash)
    self->send(before["w"].actor, crash_atom::value);
  else
    self->send(before["w"].actor, stop_atom::value);
  auto exited = expect_event(supervisor_event_kind::child_exited);
  EXPECT_EQ(exited.child, "w");
  if (param.restarted) {
    expect_event(supervisor_event_kind::child_restarted);
    auto after = children(sup);
    ASSERT_TRUE(after["w"].actor);
    EXPECT_NE(after["w"].actor, before["w"].actor);
    return;
  }
  // The supervisor restarts synchronously inside its down handler, so a request answered
  // after the exit event sees the final state.
  auto after = children(sup);
  if (param.restart == restart_type::temporary)
    EXPECT_EQ(after.count("w"), 0u) << "a temporary child leaves the supervisor";
  else
    EXPECT_FALSE(after["w"].actor) << "a transient child that stopped normally stays down";
}

INSTANTIATE_TEST_SUITE_P(
  restart_types, restart_type_test,
  ::testing::Values(restart_case{"permanent_crash", restart_type::permanent, true, true},
                    restart_case{"permanent_normal_exit", restart_type::permanent, false, true},
                    restart_case{"transient_crash", restart_type::transient, true, true},
                    restart_case{"transient_normal_exit", restart_type::transient, false, false},
                    restart_case{"temporary_crash", restart_type::temporary, true, false},
                    restart_case{"temporary_normal_exit", restart_type::temporary, false, false}),
  [](const auto& info) { return std::string{info.param.name}; });

TEST_F(supervisor_test, GivesUpAndEscalatesWhenRestartIntensityIsExceeded) {
  auto sup = start(make_spec(restart_strategy::one_for_one, {worker("w"), worker("x")}, 2), 2);
  self->monitor(sup);
  caf::actor last_x;
  for (int crash = 1; crash <= 3; ++crash) {
    auto current = children(sup);
    last_x = current["x"].actor;
    self->send(current["w"].actor, crash_atom::value);
    expect_event(supervisor_event_kind::child_exited);
    expect_event(crash <= 2 ? supervisor_event_kind::child_restarted
                            : supervisor_event_kind::gave_up);
  }
  auto down = next<caf::down_msg>();
  ASSERT_TRUE(down);
  EXPECT_TRUE(is(down->reason, errc::restart_intensity_exceeded)) << render(down->reason);
  // Its other children stop with it.
  self->monitor(last_x);
  auto child_down = next<caf::down_msg>();
  ASSERT_TRUE(child_down);
  EXPECT_EQ(child_down->source, last_x.address());
}

TEST_F(supervisor_test, NestedSupervisorThatGivesUpIsRestartedByItsParent) {
  auto inner = make_spec(restart_strategy::one_for_one, {worker("w")}, 0);
  inner.name = "inner";
  child_spec inner_child{"inner", "darcy.supervisor",      caf::make_message(inner),
                         {},      restart_type::permanent, {}};
  auto parent = start(make_spec(restart_strategy::one_for_one, {inner_child}), 1);
  auto inner_before = caf::actor_cast<supervisor_actor>(children(parent)["inner"].actor);
  ASSERT_TRUE(inner_before);
  auto w = children(inner_before)["w"].actor;
  ASSERT_TRUE(w);
  self->send(w, crash_atom::value);
  // The parent sees the inner supervisor exit with the escalated error, then restarts it.
  auto exited = expect_event(supervisor_event_kind::child_exited);
  EXPECT_EQ(exited.child, "inner");
  EXPECT_NE(exited.reason.find("restart intensity exceeded"), std::string::npos) << exited.reason;
  expect_event(supervisor_event_kind::child_restarted);
  auto inner_after = caf::actor_cast<supervisor_actor>(children(parent)["inner"].actor);
  ASSERT_TRUE(inner_after);
  EXPECT_NE(inner_after, inner_before);
  auto w_after = children(inner_after)["w"].actor;
  ASSERT_TRUE(w_after);
  EXPECT_NE(w_after, w);
}

TEST_F(supervisor_test, DuplicateChildIdsStopTheSupervisorWithInvalidArgument) {
  auto sup =
    sys.spawn(supervisor, make_spec(restart_strategy::one_for_one, {worker("a"), worker("a")}));
  self->monitor(sup);
  auto down = next<caf::down_msg>();
  ASSERT_TRUE(down);
  EXPECT_TRUE(is(down->reason, errc::invalid_argument)) << render(down->reason);
}

TEST_F(supervisor_test, UnknownFactoryIsRetriedThenEscalated) {
  child_spec bad{"bad", "no.such.type", {}, {}, restart_type::permanent, {}};
  auto sup = sys.spawn(supervisor, make_spec(restart_strategy::one_for_one, {bad}, 1));
  self->monitor(sup);
  auto down = next<caf::down_msg>();
  ASSERT_TRUE(down);
  EXPECT_TRUE(is(down->reason, errc::restart_intensity_exceeded)) << render(down->reason);
}

// A stand-in node agent: spawns what it is asked to in this process.
caf::behavior fake_agent(caf::event_based_actor* self) {
  return {
    [self](spawn_atom, const std::string& factory, caf::message& args) -> caf::result<caf::actor> {
      auto actor = self->system().spawn<caf::actor>(factory, std::move(args), nullptr, false);
      if (!actor)
        return std::move(actor.error());
      return *actor;
    }};
}

// A stand-in registry that lists nodes c and b as up, whatever happens to them.
caf::behavior stale_registry(caf::actor c, caf::actor b) {
  return {
    [=](status_atom) {
      cluster_status status;
      for (auto& [name, agent] : {std::pair{"c", c}, {"b", b}}) {
        member_info m;
        m.name = name;
        m.agent = agent;
        status.members.push_back(m);
      }
      return status;
    },
    [](subscribe_atom, const caf::actor&) {},
  };
}

// The registry may still list a node as up when the supervisor has already lost its connection
// to it: the restart goes to the next wanted node instead of waiting out a spawn request to the
// dead one. Once the registry reports the node up again, it is wanted first again.
TEST_F(supervisor_test, RestartAvoidsANodeWhoseConnectionWasLostUntilItIsUpAgain) {
  auto agent_c = sys.spawn(fake_agent);
  auto agent_b = sys.spawn(fake_agent);
  auto registry = sys.spawn(stale_registry, agent_c, agent_b);
  sys.registry().put(registry_key, caf::actor_cast<caf::strong_actor_ptr>(registry));
  auto child = worker("w");
  child.nodes = {"c", "b"};
  auto sup = sys.spawn(supervisor, make_spec(restart_strategy::one_for_one, {child}));
  self->send(sup, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
  EXPECT_EQ(expect_event(supervisor_event_kind::child_started).node, "c");
  struct loss {
    const char* name;
    caf::exit_reason reason;
    std::optional<cluster_event> before;
    const char* placed_on;
  };
  for (auto& l : std::vector<loss>{
         {"connection to c lost", caf::exit_reason::remote_link_unreachable, {}, "b"},
         {"crash on b after c is up again", caf::exit_reason::kill,
          cluster_event{cluster_event_kind::member_up, "c", "", nullptr, "", 0}, "c"},
       }) {
    if (l.before)
      self->send(sup, *l.before);
    self->send_exit(children(sup)["w"].actor, l.reason);
    expect_event(supervisor_event_kind::child_exited);
    EXPECT_EQ(expect_event(supervisor_event_kind::child_restarted).node, l.placed_on) << l.name;
  }
  self->send_exit(sup, caf::exit_reason::user_shutdown);
  sys.registry().erase(registry_key);
}

// A stand-in registry listing `members` (name, agent, up or not) with `seed` as the seed.
caf::behavior listing_registry(std::string seed,
                               std::vector<std::tuple<std::string, caf::actor, bool>> members) {
  return {
    [=](status_atom) {
      cluster_status status;
      status.seed = seed;
      for (auto& [name, agent, up] : members) {
        member_info m;
        m.name = name;
        m.agent = agent;
        m.state = up ? member_state::up : member_state::down;
        status.members.push_back(m);
      }
      return status;
    },
    [](subscribe_atom, const caf::actor&) {},
  };
}

// "*" after the wanted nodes: once they are all lost, any live member takes the child, a
// member that joined later included, and the seed only when no other is up.
TEST_F(supervisor_test, AnyNodeFallsBackToALiveMemberAndToTheSeedLast) {
  auto agent = sys.spawn(fake_agent);
  struct placement {
    const char* what;
    std::vector<std::tuple<std::string, caf::actor, bool>> members;
    const char* placed_on;
  } cases[] = {
    {"a later member before the seed",
     {{"seed", agent, true}, {"gone", agent, false}, {"late", agent, true}},
     "late"},
    {"the seed when nothing else is up", {{"seed", agent, true}, {"gone", agent, false}}, "seed"},
    {"a wanted node first",
     {{"seed", agent, true}, {"gone", agent, true}, {"late", agent, true}},
     "gone"},
  };
  for (auto& c : cases) {
    auto registry = sys.spawn(listing_registry, std::string{"seed"}, c.members);
    sys.registry().put(registry_key, caf::actor_cast<caf::strong_actor_ptr>(registry));
    auto child = worker("w");
    child.nodes = {"gone", any_node};
    auto sup = sys.spawn(supervisor, make_spec(restart_strategy::one_for_one, {child}));
    self->send(sup, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
    EXPECT_EQ(expect_event(supervisor_event_kind::child_started).node, c.placed_on) << c.what;
    self->send_exit(sup, caf::exit_reason::user_shutdown);
    self->send_exit(registry, caf::exit_reason::user_shutdown);
    sys.registry().erase(registry_key);
  }
}

} // namespace
} // namespace darcy::runtime
