// Cluster behaviour with real `darcy node` processes on loopback: a supervised service on a
// SIGKILLed node is re-created on another node and found again through the registry.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <tuple>

#include <caf/scoped_actor.hpp>
#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "actors/embedding/embedding_master.hpp"
#include "ops/session.hpp"
#include "runtime/ask.hpp"
#include "runtime/client.hpp"
#include "tests/integration/node_process.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::test {
namespace {

constexpr auto heartbeat_timeout = std::chrono::milliseconds(2000);

class cluster_test : public ::testing::Test {
protected:
  void SetUp() override {
    config_ = write_temp_file("cluster.toml", "[cluster]\nheartbeat_interval_ms = 200\n"
                                              "heartbeat_timeout_ms = 2000\n");
  }

  node_process node(const std::string& name, const std::string& join = {}) {
    auto n = start_node(name, join, {"--config", config_, "--threads", "1"});
    if (!n) {
      ADD_FAILURE() << "starting node " << name << ": " << render(n.error());
      std::abort();
    }
    return std::move(*n);
  }

  std::unique_ptr<ops::session> connect(const runtime::host_port& seed) {
    ops::session_options opts;
    opts.seed = seed;
    opts.name = "test-client";
    opts.threads = 2;
    auto s = ops::session::open(opts);
    if (!s) {
      ADD_FAILURE() << render(s.error());
      std::abort();
    }
    return std::move(*s);
  }

  // Nodes a (the seed), b and c.
  std::tuple<node_process, node_process, node_process> start_three() {
    auto a = node("a");
    auto seed = runtime::to_string(a.address);
    auto b = node("b", seed);
    auto c = node("c", seed);
    return {std::move(a), std::move(b), std::move(c)};
  }

  // Spawns a supervisor with `spec` on the node at `where`.
  void supervise_on(ops::session& s, const runtime::host_port& where, const supervisor_spec& spec) {
    auto agent = runtime::connect_agent(s.system(), where);
    ASSERT_TRUE(agent) << render(error_of(agent));
    auto sup = runtime::ask<caf::actor>(s.system(), *agent, patience, spawn_atom::value,
                                        std::string{"darcy.supervisor"}, caf::make_message(spec));
    ASSERT_TRUE(sup) << render(error_of(sup));
  }

  // Subscribes `self` to the registry and returns once the registry has processed it.
  void subscribe(caf::scoped_actor& self, ops::session& s) {
    self->send(s.registry(), subscribe_atom::value, caf::actor_cast<caf::actor>(self));
    self->request(s.registry(), patience, status_atom::value)
      .receive([](const cluster_status&) {}, [](caf::error& err) { FAIL() << render(err); });
  }

  // Waits for a cluster event matching `pred` until `deadline`; false when none came.
  template <class Pred>
  bool await_event(caf::scoped_actor& self, std::chrono::milliseconds deadline, Pred pred) {
    auto until = std::chrono::steady_clock::now() + deadline;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return false;
      bool matched = false, timed_out = false;
      self->receive([&](const cluster_event& e) { matched = pred(e); },
                    caf::after(left) >> [&] { timed_out = true; });
      if (matched)
        return true;
      if (timed_out)
        return false;
    }
  }

  std::string echo_node(ops::session& s, const std::string& payload) {
    auto info = s.lookup("echo");
    if (!info)
      return "lookup failed: " + render(info.error());
    caf::scoped_actor self{s.system()};
    std::string node;
    self->request(caf::actor_cast<echo_actor>(info->actor), patience, echo_atom::value, payload)
      .receive(
        [&](const std::string& n, const std::string& p) {
          EXPECT_EQ(p, payload);
          node = n;
        },
        [&](caf::error& err) { node = "echo failed: " + render(err); });
    return node;
  }

  std::string config_;
};

TEST_F(cluster_test, ServiceOnKilledNodeIsRecreatedOnAnotherNodeAndResolvesAgain) {
  auto [a, b, c] = start_three();
  auto s = connect(a.address);
  caf::scoped_actor self{s->system()};
  subscribe(self, *s);

  // The supervisor runs on node a; its echo child is placed on b, falling back to c.
  supervisor_spec spec{"echo-sup", restart_strategy::one_for_one, 5, 60000,
                       {{"echo", "darcy.echo", {}, {"b", "c"}, restart_type::permanent, "echo"}}};
  supervise_on(*s, a.address, spec);
  ASSERT_TRUE(await_event(self, patience, [](const cluster_event& e) {
    return e.kind == cluster_event_kind::service_up && e.service == "echo" && e.node == "b";
  }));
  EXPECT_EQ(echo_node(*s, "before"), "b");

  b.process.signal(SIGKILL);
  EXPECT_TRUE(await_event(self, heartbeat_timeout, [](const cluster_event& e) {
    return e.kind == cluster_event_kind::member_down && e.node == "b";
  })) << "the registry did not report b down within the heartbeat timeout";
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
                      caf::make_message(index), std::move(nodes), restart_type::permanent,
                      "emb.shard-" + std::to_string(index)};
  };
  supervisor_spec spec{"emb-sup", restart_strategy::one_for_one, 5, 60000,
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
  auto expected = runtime::ask<std::vector<float>>(sys, master, patience, lookup_atom::value,
                                                   cfg.name, keys);
  ASSERT_TRUE(expected);

  b.process.signal(SIGKILL);
  ASSERT_TRUE(await_event(self, patience, [](const cluster_event& e) {
    return e.kind == cluster_event_kind::service_up && e.service == "emb.shard-0"
           && e.node == "c";
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
  EXPECT_TRUE(await_event(self, patience, [](const cluster_event& e) {
    return e.kind == cluster_event_kind::member_left && e.node == "b";
  })) << b.process.read_stderr();
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
