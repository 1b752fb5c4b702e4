// Cluster behaviour with real `darcy node` processes on loopback: a supervised service on a
// SIGKILLed node is re-created on another node and found again through the registry.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <tuple>

#include <gtest/gtest.h>
#include <caf/scoped_actor.hpp>

#include "actors/embedding/embedding_master.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/client.hpp"
#include "tests/integration/cluster_fixture.hpp"

namespace darcy::test {
namespace {

TEST_F(cluster_test, ServiceOnKilledNodeIsRecreatedOnAnotherNodeAndResolvesAgain) {
  auto [a, b, c] = start_three();
  auto s = connect(a.address);
  caf::scoped_actor self{s->system()};
  subscribe(self, *s);

  // The supervisor runs on node a; its echo child is placed on b, falling back to c.
  supervise_echo_on_b(self, *s, a.address);
  EXPECT_EQ(echo_node(*s, "before"), "b");

  b.process.signal(SIGKILL);
  EXPECT_TRUE(await_event(self, heartbeat_timeout,
                          [](const cluster_event& e) {
                            return e.kind == cluster_event_kind::member_down && e.node == "b";
                          }))
    << "the registry did not report b down within the heartbeat timeout";
  ASSERT_TRUE(await_event(self, patience, [](const cluster_event& e) {
    return e.kind == cluster_event_kind::service_up && e.service == "echo";
  }));
  EXPECT_EQ(echo_node(*s, "after"), "c");

  auto status = s->status();
  ASSERT_TRUE(status);
  for (auto& m : status->members)
    EXPECT_EQ(m.state == member_state::up, m.name != "b") << m.name;

  // A darcy error raised on the seed arrives here unchanged.
  auto missing = s->lookup("no-such-service");
  ASSERT_FALSE(missing);
  EXPECT_EQ(error_of(missing), make_error(errc::unknown_service, "no-such-service"));
}

TEST_F(cluster_test, KilledShardComesBackOnAnotherNodeWithItsCheckpointedRows) {
  auto [a, b, c] = start_three();
  auto s = connect(a.address);
  caf::scoped_actor self{s->system()};
  subscribe(self, *s);
  auto shard_child = [](uint32_t index, std::vector<std::string> nodes) {
    return child_spec{"shard-" + std::to_string(index), "darcy.embedding_shard",
                      caf::make_message(index),         std::move(nodes),
                      restart_type::permanent,          "emb.shard-" + std::to_string(index)};
  };
  supervisor_spec spec{"emb-sup",
                       restart_strategy::one_for_one,
                       5,
                       60000,
                       {shard_child(0, {"b", "c"}), shard_child(1, {"c", "b"})}};
  supervise_on(*s, a.address, spec);
  std::map<std::string, caf::actor> shards;
  ASSERT_TRUE(await_event(self, patience, [&](const cluster_event& e) {
    if (e.kind == cluster_event_kind::service_up)
      shards[e.service] = e.actor;
    return shards.size() == 2;
  }));

  auto dir = write_temp_file("unused", "");
  dir += ".ckpt";
  std::filesystem::create_directories(dir);
  actors::embedding_master_options opts;
  opts.shards = {caf::actor_cast<embedding_shard_actor>(shards["emb.shard-0"]),
                 caf::actor_cast<embedding_shard_actor>(shards["emb.shard-1"])};
  opts.shard_services = {"emb.shard-0", "emb.shard-1"};
  opts.checkpoint_dir = dir;
  auto master = s->system().spawn(actors::embedding_master, opts);
  stop_on_exit stop_master{s->system(), caf::actor_cast<caf::actor>(master)};
  auto& sys = s->system();
  de_config cfg;
  cfg.name = "users";
  cfg.dim = 4;
  cfg.optimizer = {optimizer_kind::adagrad, 0.1f};
  ASSERT_TRUE(runtime::ask<ok_atom>(sys, master, patience, create_atom::value, cfg));
  std::vector<std::string> keys;
  for (int i = 0; i < 60; ++i)
    keys.push_back("user" + std::to_string(i));
  ASSERT_TRUE(runtime::ask<ok_atom>(sys, master, patience, update_atom::value, cfg.name, keys,
                                    std::vector<float>(keys.size() * 4, 0.5f), int64_t{1}));
  ASSERT_TRUE(runtime::ask<checkpoint_manifest>(sys, master, patience, save_atom::value, dir,
                                                int64_t{1}, std::string{}));
  auto expected =
    runtime::ask<std::vector<float>>(sys, master, patience, lookup_atom::value, cfg.name, keys);
  ASSERT_TRUE(expected);

  b.process.signal(SIGKILL);
  ASSERT_TRUE(await_event(self, patience, [](const cluster_event& e) {
    return e.kind == cluster_event_kind::service_up && e.service == "emb.shard-0" && e.node == "c";
  }));
  // Requests that reach the dead shard fail at once until the master has heard of the new one
  // and recovered it, which under load can take longer than any fixed number of attempts.
  caf::expected<std::vector<float>> after{caf::error{}};
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (!after && std::chrono::steady_clock::now() < deadline)
    after = runtime::ask<std::vector<float>>(sys, master, std::chrono::seconds(5),
                                             lookup_atom::value, cfg.name, keys);
  ASSERT_TRUE(after) << render(error_of(after));
  EXPECT_EQ(*after, *expected) << "the restarted shard serves its checkpointed rows";
  std::filesystem::remove_all(dir);
}

TEST_F(cluster_test, SigtermMakesANodeLeaveCleanly) {
  auto a = node("a");
  auto b = node("b", runtime::to_string(a.address));
  auto s = connect(a.address);
  caf::scoped_actor self{s->system()};
  subscribe(self, *s);
  b.process.signal(SIGTERM);
  EXPECT_TRUE(await_event(self, patience,
                          [](const cluster_event& e) {
                            return e.kind == cluster_event_kind::member_left && e.node == "b";
                          }))
    << b.process.read_stderr();
  auto code = b.process.wait(patience);
  ASSERT_TRUE(code) << b.process.read_stderr();
  EXPECT_EQ(*code, 0);
}

TEST_F(cluster_test, CliPrintsStatusAndKillsANode) {
  auto a = node("a");
  auto seed = runtime::to_string(a.address);
  auto b = node("b", seed);
  auto status = run_darcy({"cluster", "status", "--seed", seed});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("2 of 2 members up"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find(runtime::to_string(b.address)), std::string::npos) << status.out;

  auto kill = run_darcy({"chaos", "kill-node", "b", "--seed", seed});
  EXPECT_EQ(kill.exit_code, 0) << kill.err;
  auto code = b.process.wait(patience);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 128 + SIGKILL);

  auto unknown = run_darcy({"chaos", "kill-actor", "nothing", "--seed", seed});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("unknown service: nothing"), std::string::npos) << unknown.err;
}

} // namespace
} // namespace darcy::test
