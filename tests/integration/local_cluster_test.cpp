// darcy_testing's local_cluster on its own: bad options are refused with clear errors, and the
// operations an app's fault-tolerance test needs (kill, replacement member, stop, a watched
// registry) behave as the header says.
#include "ops/testing/local_cluster.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::testing {
namespace {

constexpr auto cluster_patience = std::chrono::seconds(30);

TEST(local_cluster, bad_options_are_refused_with_clear_errors) {
  struct {
    const char* what;
    local_cluster_options options;
    errc expected;
  } bad[] = {
    {"no node", {.nodes = 0, .binary = DARCY_BINARY}, errc::invalid_config},
    {"a binary that is not there", {.nodes = 1, .binary = "/nonexistent/darcy"}, errc::io_error},
    {"a flag darcy node does not know",
     {.nodes = 1, .binary = DARCY_BINARY, .node_args = {"--bogus"}},
     errc::io_error},
  };
  for (auto& b : bad) {
    auto c = local_cluster::start(b.options);
    ASSERT_FALSE(c) << b.what;
    EXPECT_TRUE(is(c.error(), b.expected)) << b.what << ": " << render(c.error());
  }
}

TEST(local_cluster, a_killed_member_goes_down_a_replacement_joins_and_a_stopped_one_leaves) {
  auto c = local_cluster::start({.nodes = 2, .binary = DARCY_BINARY});
  ASSERT_TRUE(c) << render(c.error());
  auto& cluster = **c;
  ASSERT_FALSE(cluster.wait_for([](const cluster_status& st) { return st.members.size() == 2; },
                                cluster_patience));
  ASSERT_FALSE(cluster.kill(1));
  EXPECT_EQ(cluster.pid(1), -1);
  EXPECT_TRUE(is(cluster.kill(1), errc::invalid_argument)) << "killing a dead node";
  EXPECT_FALSE(cluster.wait_for(
    [](const cluster_status& st) { return state_of(st, "node-1") != member_state::up; },
    cluster_patience));
  auto added = cluster.add_node();
  ASSERT_TRUE(added) << render(added.error());
  EXPECT_EQ(cluster.name(*added), "node-2");
  ASSERT_FALSE(cluster.wait_for(
    [](const cluster_status& st) { return state_of(st, "node-2") == member_state::up; },
    cluster_patience));
  ASSERT_FALSE(cluster.stop(2));
  EXPECT_FALSE(cluster.wait_for(
    [](const cluster_status& st) { return state_of(st, "node-2") != member_state::up; },
    cluster_patience))
    << "a SIGTERMed member leaves";
  auto never =
    cluster.wait_for([](const cluster_status&) { return false; }, std::chrono::milliseconds(200));
  EXPECT_TRUE(is(never, errc::timeout)) << render(never);
}

TEST(local_cluster, a_partitioned_member_goes_down_and_is_readmitted_under_a_new_incarnation) {
  if (!runtime::netns_network::available())
    GTEST_SKIP() << "network namespaces need root and iproute2";
  auto c = local_cluster::start({.nodes = 3, .binary = DARCY_BINARY, .netns = true});
  ASSERT_TRUE(c) << render(c.error());
  auto& cluster = **c;
  EXPECT_NE(cluster.address(1).host, "127.0.0.1") << "each node has an address of its own";
  uint64_t before = 0;
  ASSERT_FALSE(cluster.wait_for(
    [&](const cluster_status& st) {
      for (auto& m : st.members)
        if (m.name == "node-2" && m.state == member_state::up)
          before = m.incarnation;
      return st.members.size() == 3 && before > 0;
    },
    cluster_patience));
  ASSERT_FALSE(cluster.partition(2));
  // Its connections stay open: only the missed heartbeats tell.
  ASSERT_FALSE(cluster.wait_for(
    [](const cluster_status& st) { return state_of(st, "node-2") == member_state::down; },
    cluster_patience));
  EXPECT_TRUE(cluster.pid(2) > 0) << "the process runs on, cut off";
  ASSERT_FALSE(cluster.heal(2));
  uint64_t after = 0;
  EXPECT_FALSE(cluster.wait_for(
    [&](const cluster_status& st) {
      for (auto& m : st.members)
        if (m.name == "node-2" && m.state == member_state::up)
          after = m.incarnation;
      return after > before;
    },
    cluster_patience))
    << "the healed member was not re-admitted under a new incarnation";
  auto plain = local_cluster::start({.nodes = 1, .binary = DARCY_BINARY});
  ASSERT_TRUE(plain);
  EXPECT_TRUE(is((*plain)->partition(0), errc::unsupported));
}

} // namespace
} // namespace darcy::testing
