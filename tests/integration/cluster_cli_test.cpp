// `darcy cluster up` and `down` as an operator runs them: up starts a seed and members that
// outlive the command and writes the cluster file that other commands take instead of an
// address; a second up in the same directory is refused; down stops every node.
#include <signal.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "runtime/cluster/cluster_file.hpp"
#include "runtime/process/netns.hpp"
#include "runtime/process/process.hpp"
#include "tests/integration/node_process.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

bool alive(int64_t pid) {
  return ::kill(static_cast<pid_t>(pid), 0) == 0;
}

TEST(cluster_cli, up_starts_nodes_that_status_sees_through_the_cluster_file_and_down_stops_them) {
  temp_dir dir{"cluster_cli"};
  auto up = run_darcy({"cluster", "up", "--nodes", "3", "--dir", dir.path()});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  auto file = runtime::read_cluster_file(dir.path() + "/cluster.json");
  ASSERT_TRUE(file) << render(file.error());
  ASSERT_EQ(file->nodes.size(), 3u);
  for (auto& n : file->nodes)
    EXPECT_TRUE(alive(n.pid)) << n.name << " outlives `cluster up`";

  auto status = run_darcy({"cluster", "status", "--seed", dir.path()});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("3 of 3 members up"), std::string::npos) << status.out;

  auto again = run_darcy({"cluster", "up", "--nodes", "2", "--dir", dir.path()});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("already up"), std::string::npos) << again.err;

  auto down = run_darcy({"cluster", "down", "--dir", dir.path()});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_NE(down.out.find("stopped 3 of 3"), std::string::npos) << down.out;
  for (auto& n : file->nodes) {
    // Reaped by init once they exit; give it a moment to do so.
    for (int i = 0; i < 500 && alive(n.pid); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_FALSE(alive(n.pid)) << n.name;
  }
  auto gone = run_darcy({"cluster", "down", "--dir", dir.path()});
  EXPECT_EQ(gone.exit_code, 1) << "no cluster file is left";
}

TEST(cluster_cli, up_with_netns_puts_each_node_in_a_namespace_that_down_removes) {
  if (!runtime::netns_network::available())
    GTEST_SKIP() << "network namespaces need root and iproute2";
  temp_dir dir{"cluster_cli_netns"};
  auto up = run_darcy({"cluster", "up", "--nodes", "2", "--netns", "--dir", dir.path()});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  auto file = runtime::read_cluster_file(dir.path() + "/cluster.json");
  ASSERT_TRUE(file) << render(file.error());
  ASSERT_FALSE(file->netns.empty());
  EXPECT_EQ(file->nodes[1].address.host.rfind("10.213.", 0), 0u) << "an address of its own";
  auto prefix = file->netns.substr(0, file->netns.find(' '));
  auto namespaces = [] { return runtime::child_process::start({"/usr/sbin/ip", "netns", "list"}); };
  auto listed = [&] {
    auto p = namespaces();
    if (!p)
      return std::string{};
    p->wait_for_line("\x01", std::chrono::seconds(10));
    p->wait(std::chrono::seconds(10));
    return p->stdout_seen();
  };
  EXPECT_NE(listed().find(prefix + "-n1"), std::string::npos);
  auto status = run_darcy({"cluster", "status", "--seed", dir.path()});
  EXPECT_NE(status.out.find("2 of 2 members up"), std::string::npos) << status.out << status.err;
  auto down = run_darcy({"cluster", "down", "--dir", dir.path()});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_EQ(listed().find(prefix + "-"), std::string::npos) << "down removes the namespaces";
}

} // namespace
} // namespace darcy::test
