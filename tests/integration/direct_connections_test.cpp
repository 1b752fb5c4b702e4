// A client that meets node processes through the seed: it gets one direct connection to each
// (opened by one side of the pair only) and keeps every handle it holds to them alive.
#include "runtime/direct_connections.hpp"

#include <ifaddrs.h>
#include <netinet/in.h>

#include "runtime/cluster/spawn_on.hpp"
#include "tests/integration/cluster_fixture.hpp"

namespace darcy::test {
namespace {

// CAF's automatic connections use the machine's addresses other than loopback.
bool has_address_beyond_loopback() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0)
    return false;
  bool found = false;
  for (auto* i = list; i != nullptr && !found; i = i->ifa_next)
    if (i->ifa_addr != nullptr && i->ifa_addr->sa_family == AF_INET)
      found =
        reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr != htonl(INADDR_LOOPBACK);
  freeifaddrs(list);
  return found;
}

class direct_connections : public cluster_test {};

TEST_F(direct_connections,
       a_client_that_met_nodes_through_the_seed_reaches_each_directly_and_stays) {
  auto [a, b, c] = start_three();
  auto s = connect(a.address, patience);
  auto status =
    runtime::ask<cluster_status>(s->system(), s->registry(), patience, status_atom::value);
  ASSERT_TRUE(status) << render(error_of(status));
  auto targets = runtime::live_targets(*status, {"b", "c"});
  ASSERT_TRUE(targets) << render(targets.error());
  ASSERT_EQ(targets->size(), 2u);
  bool direct_expected = has_address_beyond_loopback();
  for (auto& target : *targets) {
    auto agent = caf::actor_cast<caf::actor>(target.agent);
    auto deadline = std::chrono::steady_clock::now() + patience;
    std::string route;
    // Each ping is a round trip through the seed until one side of the pair connects.
    do {
      auto pong = runtime::ask<std::string>(s->system(), target.agent, patience, ping_atom::value);
      ASSERT_TRUE(pong) << target.node << ": " << render(error_of(pong));
      auto r = runtime::direct_route(s->system(), agent.node(), patience);
      ASSERT_TRUE(r) << render(r.error());
      route = *r;
    } while (direct_expected && route.empty() && std::chrono::steady_clock::now() < deadline);
    if (direct_expected) {
      EXPECT_NE(route, "") << "no direct connection to node " << target.node;
    }
    for (int i = 0; i < 20; ++i)
      ASSERT_TRUE(runtime::ask<std::string>(s->system(), target.agent, patience, ping_atom::value))
        << target.node << ", ping " << i;
    EXPECT_FALSE(runtime::is_lost_proxy(agent)) << target.node;
    auto spawned = runtime::spawn_on(s->system(), target, patience, "darcy.echo", {});
    ASSERT_TRUE(spawned) << render(spawned.error());
    caf::anon_send_exit(*spawned, caf::exit_reason::user_shutdown);
  }
}

} // namespace
} // namespace darcy::test
