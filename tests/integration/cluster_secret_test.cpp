// The cluster secret with real processes: a node or client without it (or with another one) is
// refused at the seed, a member agent refuses spawns and kill-node from such a process, and
// one that holds the secret is served as before.
#include <sys/stat.h>

#include <fstream>

#include "runtime/cluster/cluster_secret.hpp"
#include "runtime/system_config.hpp"
#include "tests/integration/cluster_fixture.hpp"

namespace darcy::test {
namespace {

std::string secret_file(const std::string& name, const std::string& secret) {
  auto path = write_temp_file(name, secret + "\n");
  ::chmod(path.c_str(), 0600);
  return path;
}

TEST_F(cluster_test, NodesAndClientsWithoutTheSecretAreRefused) {
  auto right = secret_file("secret-right", "correct horse");
  auto wrong = secret_file("secret-wrong", "battery staple");
  auto seed = start_node("seed", {}, {"--config", config_, "--secret-file", right});
  ASSERT_TRUE(seed) << render(seed.error());
  auto where = runtime::to_string(seed->address);
  auto member = start_node("b", where, {"--config", config_, "--secret-file", right});
  ASSERT_TRUE(member) << render(member.error());

  for (auto extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--secret-file", wrong}}) {
    extra.insert(extra.begin(), {"--config", config_});
    auto intruder = start_node("intruder", where, extra);
    ASSERT_FALSE(intruder) << "a node without the secret joined";
    EXPECT_NE(render(intruder.error()).find("cluster secret"), std::string::npos)
      << render(intruder.error());
    auto status =
      run_darcy(extra.size() > 2 ? std::vector<std::string>{"cluster", "status", "--seed", where,
                                                            "--secret-file", wrong}
                                 : std::vector<std::string>{"cluster", "status", "--seed", where});
    EXPECT_EQ(status.exit_code, 1);
    EXPECT_NE(status.err.find("cluster secret"), std::string::npos) << status.err;
    // Every chaos command needs the secret: the seed refuses the client before any node sees it.
    for (auto chaos : {std::vector<std::string>{"chaos", "kill-node", "b"},
                       std::vector<std::string>{"chaos", "disrupt", "b", "--drop", "1"},
                       std::vector<std::string>{"chaos", "heal", "b"}}) {
      chaos.insert(chaos.end(), {"--seed", where});
      if (extra.size() > 2)
        chaos.insert(chaos.end(), {"--secret-file", wrong});
      auto r = run_darcy(chaos);
      EXPECT_EQ(r.exit_code, 1) << chaos[1];
      EXPECT_NE(r.err.find("cluster secret"), std::string::npos) << chaos[1] << ": " << r.err;
    }
  }
  EXPECT_NE(seed->process.read_stderr().find("wrong or missing cluster secret"), std::string::npos);

  // Talking to the member's agent directly, past the seed, is refused too.
  runtime::system_config cfg{"outsider", 1};
  caf::actor_system sys{cfg};
  auto refused = runtime::connect_cluster(sys, seed->address, patience);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(error_of(refused), errc::permission_denied));
  auto agent = runtime::connect_agent(sys, member->address);
  ASSERT_TRUE(agent);
  auto spawned = runtime::ask<caf::actor>(sys, *agent, patience, spawn_atom::value,
                                          std::string{"darcy.echo"}, caf::make_message());
  ASSERT_FALSE(spawned);
  EXPECT_TRUE(is(error_of(spawned), errc::permission_denied)) << render(error_of(spawned));
  auto chaos = runtime::ask<chaos_stats>(
    sys, *agent, patience, chaos_command{chaos_op::disrupt, disruption{1.0}}, caf::actor{});
  ASSERT_FALSE(chaos);
  EXPECT_TRUE(is(error_of(chaos), errc::permission_denied)) << render(error_of(chaos));
  caf::anon_send(*agent, kill_node_atom::value);
  // Asked after the kill-node, answered after it: b is alive past the refusal.
  auto echoed =
    runtime::ask<std::string>(sys, *agent, patience, echo_atom::value, std::string{"still there"});
  EXPECT_TRUE(echoed) << render(error_of(echoed));
  EXPECT_FALSE(member->process.wait(std::chrono::milliseconds(0))) << "b died";

  auto ok = run_darcy({"cluster", "status", "--seed", where, "--secret-file", right});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("b"), std::string::npos) << ok.out;
  auto kill = run_darcy({"chaos", "kill-node", "b", "--seed", where, "--secret-file", right});
  EXPECT_EQ(kill.exit_code, 0) << kill.err;
  auto code = member->process.wait(patience);
  ASSERT_TRUE(code) << "b survived an authorised kill-node";
  EXPECT_EQ(*code, 128 + SIGKILL);
}

} // namespace
} // namespace darcy::test
