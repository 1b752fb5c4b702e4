// darcy_testing's local_cluster on its own: bad options are refused with clear errors, and the
// operations an app's fault-tolerance test needs (kill, replacement member, stop, a watched
// registry) behave as the header says.
#include "ops/testing/local_cluster.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::testing {
namespace {

constexpr auto patience = std::chrono::seconds(30);

TEST(local_cluster, bad_options_are_refused_with_clear_errors) {
  struct {
    const char* what;
    local_cluster_options options;
    errc expected;
  } bad[] = {
    {"no node", {.nodes = 0, .binary = DARCY_BINARY}, errc::invalid_config},
    {"a binary that is not there", {.nodes = 1, .binary = "/nonexistent/darcy"}, errc::io_error},
    {"a flag darcy node does not know", {.nodes = 1, .binary = DARCY_BINARY, .node_args = {"--bogus"}},
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
  ASSERT_FALSE(cluster.wait_for([](const cluster_status& st) { return st.members.size() == 2; }, patience));
  ASSERT_FALSE(cluster.kill(1));
  EXPECT_EQ(cluster.pid(1), -1);
  EXPECT_TRUE(is(cluster.kill(1), errc::invalid_argument)) << "killing a dead node";
  EXPECT_FALSE(cluster.wait_for(
    [](const cluster_status& st) { return state_of(st, "node-1") != member_state::up; }, patience));
  auto added = cluster.add_node();
  ASSERT_TRUE(added) << render(added.error());
  EXPECT_EQ(cluster.name(*added), "node-2");
  ASSERT_FALSE(cluster.wait_for(
    [](const cluster_status& st) { return state_of(st, "node-2") == member_state::up; }, patience));
  ASSERT_FALSE(cluster.stop(2));
  EXPECT_FALSE(cluster.wait_for(
    [](const cluster_status& st) { return state_of(st, "node-2") != member_state::up; }, patience))
    << "a SIGTERMed member leaves";
  auto never = cluster.wait_for([](const cluster_status&) { return false; }, std::chrono::milliseconds(200));
  EXPECT_TRUE(is(never, errc::timeout)) << render(never);
}

} // namespace
} // namespace darcy::testing
