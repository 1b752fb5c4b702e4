#include "runtime/chaos.hpp"

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
  // Sends 0..n-1 through a proxy with `plan`; returns what reached the target, in order.
  std::vector<int> relay(const disruption& plan, int n, chaos_stats* stats = nullptr) {
    auto target = sys.spawn(recorder);
    auto proxy = sys.spawn(chaos_proxy, target, plan);
    for (int i = 0; i < n; ++i)
      self->send(proxy, i);
    chaos_stats counted;
    self->request(proxy, test::patience, stats_atom::value)
      .receive([&](chaos_stats& s) { counted = s; },
               [](caf::error& err) { ADD_FAILURE() << render(err); });
    if (stats)
      *stats = counted;
    std::vector<int> received;
    self->request(target, test::patience, get_atom::value)
      .receive([&](std::vector<int>& xs) { received = std::move(xs); },
               [](caf::error& err) { ADD_FAILURE() << render(err); });
    return received;
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

TEST_F(chaos_test, DelayedRequestStillGetsItsResponse) {
  auto target = sys.spawn(recorder);
  auto proxy = sys.spawn(chaos_proxy, target, disruption{0, 1.0, 5, 1});
  std::string reply;
  self->request(proxy, test::patience, echo_atom::value, std::string{"hi"})
    .receive([&](std::string& s) { reply = s; },
             [](caf::error& err) { ADD_FAILURE() << render(err); });
  EXPECT_EQ(reply, "hi");
  chaos_stats stats;
  self->request(proxy, test::patience, stats_atom::value)
    .receive([&](chaos_stats& s) { stats = s; }, [](caf::error&) {});
  EXPECT_EQ(stats.delayed, 1u);
  EXPECT_EQ(stats.forwarded, 1u);
}

TEST_F(chaos_test, DroppedRequestNeverGetsAResponse) {
  auto proxy = sys.spawn(chaos_proxy, sys.spawn(recorder), disruption{1.0, 0, 0, 1});
  caf::error failure;
  self->request(proxy, std::chrono::milliseconds(100), echo_atom::value, std::string{"hi"})
    .receive([](std::string&) { ADD_FAILURE() << "a dropped request was answered"; },
             [&](caf::error& err) { failure = err; });
  EXPECT_EQ(failure, caf::sec::request_timeout);
}

TEST(chaos_validate, RejectsFractionsOutsideTheUnitInterval) {
  struct row {
    disruption plan;
    bool ok;
  } rows[] = {
    {{0, 0, 0, 1}, true},    {{1, 1, 10, 1}, true},  {{-0.1, 0, 0, 1}, false},
    {{1.5, 0, 0, 1}, false}, {{0, 2, 0, 1}, false},  {{0, 0.5, -1, 1}, false},
  };
  for (auto& r : rows)
    EXPECT_EQ(!validate(r.plan), r.ok) << r.plan.drop << " " << r.plan.delay;
}

} // namespace
} // namespace darcy::runtime
