// TLS between nodes with real processes (scripts/make_tls.sh makes the certificates): members
// and clients with a certificate of the cluster's CA work as before, a job crosses the nodes,
// and a node or client without TLS or with another CA's certificate is refused, each refusal
// leaving the members' own connections up (CAF 0.17 used to close them: runtime/tls.cpp).
#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/testing/local_cluster.hpp"
#include "runtime/process/process.hpp"
#include "tests/integration/node_process.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

/// Runs scripts/make_tls.sh with `args`; its exit code.
int make_tls(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/bin/bash",
                                std::string{DARCY_SOURCE_DIR} + "/scripts/make_tls.sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = runtime::child_process::start(argv);
  if (!child)
    return -1;
  child->wait_for_line("\x01", std::chrono::seconds(60));
  auto code = child->wait(std::chrono::seconds(60));
  return code ? *code : -1;
}

uint64_t incarnation_of(const cluster_status& st, const std::string& name) {
  for (auto& m : st.members)
    if (m.name == name && m.state == member_state::up)
      return m.incarnation;
  return 0;
}

TEST(tls, only_nodes_and_clients_with_a_certificate_of_the_cluster_ca_get_in) {
  temp_dir dir{"tls"};
  auto good = dir.path() + "/good", rogue = dir.path() + "/rogue";
  ASSERT_EQ(make_tls({good, "node", "client"}), 0);
  ASSERT_EQ(make_tls({rogue, "rogue"}), 0);
  auto c =
    testing::local_cluster::start({.nodes = 2, .binary = DARCY_BINARY, .tls_dir = good + "/node"});
  ASSERT_TRUE(c) << render(c.error());
  auto& nodes = **c;
  auto before = nodes.status();
  ASSERT_TRUE(before) << render(before.error());
  auto member = incarnation_of(*before, "node-1");
  ASSERT_GT(member, 0u);
  auto seed = runtime::to_string(nodes.seed());

  // A peer of another CA fails to verify the members' certificate itself, whenever CAF sees
  // the failure, so its error gives OpenSSL's reason.
  struct refusal {
    const char* what;
    std::vector<std::string> args;
    const char* reason;
  } refusals[] = {
    {"a node without TLS",
     {"node", "--name", "plain", "--listen", "127.0.0.1:0", "--join", seed},
     "handshake"},
    {"a node of another CA",
     {"--tls-dir", rogue + "/rogue", "node", "--name", "rogue", "--listen", "127.0.0.1:0", "--join",
      seed},
     "certificate verify failed"},
    {"a client without TLS", {"cluster", "status", "--seed", seed}, "handshake"},
    {"a client of another CA",
     {"--tls-dir", rogue + "/rogue", "cluster", "status", "--seed", seed},
     "certificate verify failed"},
    {"a kill-node from another CA",
     {"--tls-dir", rogue + "/rogue", "chaos", "kill-node", "node-1", "--seed", seed},
     "certificate verify failed"},
  };
  for (auto& r : refusals) {
    auto run = run_darcy(r.args);
    EXPECT_EQ(run.exit_code, 1) << r.what << ": " << run.err;
    EXPECT_NE(run.err.find("handshake"), std::string::npos) << r.what << ": " << run.err;
    EXPECT_NE(run.err.find(r.reason), std::string::npos) << r.what << ": " << run.err;
  }

  auto status = run_darcy({"--tls-dir", good + "/client", "cluster", "status", "--seed", seed});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("2 of 2 members up"), std::string::npos) << status.out;
  temp_dir out{"tls_wals"};
  auto wals = run_darcy({"--tls-dir",
                         good + "/client",
                         "wals",
                         "train",
                         "--synthetic-rows",
                         "300",
                         "--synthetic-cols",
                         "200",
                         "--synthetic-nnz",
                         "3000",
                         "--dim",
                         "4",
                         "--iters",
                         "2",
                         "--workers",
                         "2",
                         "--cluster",
                         seed,
                         "--chief-node",
                         "node-1",
                         "--out",
                         out.path() + "/model",
                         "--quiet"});
  EXPECT_EQ(wals.exit_code, 0) << wals.err;
  // The refused handshakes cost the members nothing: node-1 never left.
  auto after = nodes.status();
  ASSERT_TRUE(after) << render(after.error());
  EXPECT_EQ(incarnation_of(*after, "node-1"), member);
  EXPECT_TRUE(nodes.pid(1) > 0);
}

} // namespace
} // namespace darcy::test
