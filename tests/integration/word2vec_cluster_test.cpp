// `darcy word2vec train --cluster` survives the loss of a node: shards are supervised, the run
// checkpoints every few batches, and a lost shard is placed on another node, the model
// restored from the newest checkpoint and the lost batches replayed. It also survives lost
// messages: `darcy chaos disrupt` on a running shard costs retries, not the run. Real
// processes, SIGKILL, and a partition with every node in a network namespace of its own.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>

#include "ops/testing/local_cluster.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "tests/integration/cluster_fixture.hpp"

namespace darcy::test {
namespace {

// Three topics of seven words; a sentence draws from one topic.
std::string topic_corpus() {
  std::mt19937_64 rng{5};
  std::vector<std::vector<std::string>> topics{
    {"cat", "dog", "pet", "fur", "paw", "tail", "bark"},
    {"car", "road", "wheel", "fuel", "drive", "lane", "brake"},
    {"sun", "moon", "star", "sky", "night", "orbit", "light"}};
  std::string text;
  for (int s = 0; s < 20000; ++s) {
    auto& topic = topics[rng() % topics.size()];
    for (int w = 0; w < 12; ++w)
      text += topic[rng() % topic.size()] + (w % 4 == 0 ? " the " : " ");
    text += "\n";
  }
  return write_temp_file("w2v-topics.txt", text);
}

// The newest periodic checkpoint's batch, or -1 while there is none.
int64_t checkpointed_batch(const std::string& dir) {
  auto manifest = stores::checkpoint_dir{dir}.read_manifest();
  return manifest ? manifest->step : -1;
}

class word2vec_cluster : public cluster_test {
protected:
  std::string periodic_dir() const {
    return (std::filesystem::temp_directory_path() /
            ("darcy_w2v_cluster_" + std::to_string(::getpid())))
      .string();
  }

  // Runs `darcy chaos <args...> --seed <seed>`, which must succeed; its stdout.
  std::string chaos(const node_process& seed, std::vector<std::string> args) {
    args.insert(args.begin(), "chaos");
    args.insert(args.end(), {"--seed", runtime::to_string(seed.address)});
    auto run = run_darcy(args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run.out;
  }

  // Trains on a cluster whose seed is `seed`, SIGKILLs `victim` once a checkpoint past batch
  // 30 exists (with the driver paused), and returns the driver's stdout after it exits.
  std::string train_through_a_kill(const node_process& seed, node_process& victim) {
    auto dir = periodic_dir();
    std::filesystem::remove_all(dir);
    auto vectors = dir + ".vec";
    auto driver = runtime::child_process::start({DARCY_BINARY,
                                                 "word2vec",
                                                 "train",
                                                 "--corpus",
                                                 topic_corpus(),
                                                 "--cluster",
                                                 runtime::to_string(seed.address),
                                                 "--shards",
                                                 "1",
                                                 "--dim",
                                                 "16",
                                                 "--epochs",
                                                 "12",
                                                 "--threads",
                                                 "2",
                                                 "--batch-words",
                                                 "2000",
                                                 "--checkpoint-every",
                                                 "10",
                                                 "--periodic-checkpoint",
                                                 dir,
                                                 "--output",
                                                 vectors,
                                                 "--quiet"});
    EXPECT_TRUE(driver) << render(driver.error());
    if (!driver)
      return {};
    while (checkpointed_batch(dir) < 30 && !driver->wait(std::chrono::milliseconds(20)))
      continue;
    // The driver is stopped while the victim dies, so that the kill lands mid-run however
    // fast the remaining batches would go.
    driver->signal(SIGSTOP);
    victim.process.signal(SIGKILL);
    victim.process.wait(std::chrono::seconds(30));
    driver->signal(SIGCONT);
    auto summary = driver->wait_for_line("vectors: ", std::chrono::seconds(150));
    EXPECT_TRUE(summary) << driver->read_stderr();
    auto code = driver->wait(std::chrono::seconds(30));
    EXPECT_TRUE(code) << "driver still running";
    EXPECT_EQ(code ? *code : -1, 0) << driver->read_stderr();
    auto out = driver->stdout_seen();
    EXPECT_TRUE(std::filesystem::exists(vectors)) << out;
    std::filesystem::remove_all(dir);
    std::filesystem::remove(vectors);
    return out;
  }
};

TEST_F(word2vec_cluster, ShardNodeKilledMidRunIsRecoveredAndTheLostBatchesReplayed) {
  auto [seed, a, b] = start_three();
  auto out = train_through_a_kill(seed, b);
  EXPECT_NE(out.find("recovered from 1 lost shard(s)"), std::string::npos) << out;
  EXPECT_NE(out.find("trained 3600000 words"), std::string::npos) << out;
}

TEST_F(word2vec_cluster, SeedKilledMidRunCostsNoShard) {
  auto [seed, a, b] = start_three();
  auto out = train_through_a_kill(seed, seed);
  EXPECT_NE(out.find("recovered from 0 lost shard(s)"), std::string::npos) << out;
  EXPECT_NE(out.find("trained 3600000 words"), std::string::npos) << out;
}

// The gate in front of shard 0 drops 5% of the messages sent to it while the run goes on:
// each lost request costs a retry after --shard-retry-ms, and the run still completes.
TEST_F(word2vec_cluster, DroppingFivePercentOfAShardsMessagesCostsRetriesNotTheRun) {
  auto [seed, a, b] = start_three();
  auto dir = periodic_dir();
  std::filesystem::remove_all(dir);
  auto driver = runtime::child_process::start({DARCY_BINARY,
                                               "word2vec",
                                               "train",
                                               "--corpus",
                                               topic_corpus(),
                                               "--cluster",
                                               runtime::to_string(seed.address),
                                               "--shards",
                                               "1",
                                               "--dim",
                                               "16",
                                               "--epochs",
                                               "6",
                                               "--threads",
                                               "2",
                                               "--batch-words",
                                               "2000",
                                               "--checkpoint-every",
                                               "10",
                                               "--periodic-checkpoint",
                                               dir,
                                               "--shard-retry-ms",
                                               "200",
                                               "--quiet"});
  ASSERT_TRUE(driver) << render(driver.error());
  while (checkpointed_batch(dir) < 10 && !driver->wait(std::chrono::milliseconds(20)))
    continue;
  auto s = connect(seed.address);
  auto status = s->status();
  ASSERT_TRUE(status) << render(status.error());
  std::string shard;
  for (auto& svc : status->services)
    if (svc.name.ends_with(".shard.0"))
      shard = svc.name;
  ASSERT_FALSE(shard.empty()) << "no shard service registered";
  auto disrupted = chaos(seed, {"disrupt", shard, "--drop", "0.05", "--rng-seed", "7"});
  EXPECT_NE(disrupted.find("now drops 0.05"), std::string::npos) << disrupted;
  auto from = checkpointed_batch(dir);
  while (checkpointed_batch(dir) < from + 60 && !driver->wait(std::chrono::milliseconds(20)))
    continue;
  auto healed = chaos(seed, {"heal", shard});
  auto dropped_at = healed.find("\"dropped\": ");
  ASSERT_NE(dropped_at, std::string::npos) << healed;
  auto dropped = std::stoull(healed.substr(dropped_at + 11));
  EXPECT_GT(dropped, 0u) << healed;
  auto retried = driver->wait_for_line("sent again after a timeout: ", std::chrono::seconds(150));
  ASSERT_TRUE(retried) << driver->stdout_seen() << driver->read_stderr();
  // Every dropped request was sent again (a late answer can add more).
  EXPECT_GE(std::stoull(retried->substr(retried->find(": ") + 2)), dropped) << *retried;
  auto code = driver->wait(std::chrono::seconds(30));
  EXPECT_EQ(code ? *code : -1, 0) << driver->read_stderr();
  EXPECT_NE(driver->stdout_seen().find("trained 1800000 words"), std::string::npos)
    << driver->stdout_seen();
  std::filesystem::remove_all(dir);
}

// A shard's node cut off the network mid-run (its process runs on, its connections stay open):
// the registry gives it up at its missed heartbeats, the shard is placed on another node and
// refilled from the newest checkpoint, the lost batches are replayed, and the run completes.
// Once the link is back the node is re-admitted under a new incarnation.
TEST_F(word2vec_cluster, ShardNodeCutOffTheNetworkIsRecoveredAndReadmittedWhenHealed) {
  if (!runtime::netns_network::available())
    GTEST_SKIP() << "network namespaces need root and iproute2";
  auto c = testing::local_cluster::start({.nodes = 3, .binary = DARCY_BINARY, .netns = true});
  ASSERT_TRUE(c) << render(c.error());
  auto& nodes = **c;
  auto dir = periodic_dir();
  std::filesystem::remove_all(dir);
  // One thread: a run on a cluster is then deterministic, so the partitioned run must end with
  // the clean run's vectors, bit for bit: no batch lost, none applied twice.
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{DARCY_BINARY,
                                    "word2vec",
                                    "train",
                                    "--corpus",
                                    topic_corpus(),
                                    "--cluster",
                                    runtime::to_string(nodes.seed()),
                                    "--shards",
                                    "1",
                                    "--dim",
                                    "16",
                                    "--epochs",
                                    "12",
                                    "--threads",
                                    "1",
                                    "--batch-words",
                                    "2000",
                                    "--checkpoint-every",
                                    "10",
                                    "--periodic-checkpoint",
                                    dir,
                                    "--shard-retry-ms",
                                    "500",
                                    "--output",
                                    out,
                                    "--quiet"};
  };
  auto clean = runtime::child_process::start(args(dir + ".clean.vec"));
  ASSERT_TRUE(clean);
  auto clean_code = clean->wait(std::chrono::seconds(150));
  ASSERT_TRUE(clean_code && *clean_code == 0) << clean->read_stderr();
  std::filesystem::remove_all(dir);
  auto driver = runtime::child_process::start(args(dir + ".vec"));
  ASSERT_TRUE(driver) << render(driver.error());
  while (checkpointed_batch(dir) < 30 && !driver->wait(std::chrono::milliseconds(20)))
    continue;
  uint64_t before = 0;
  auto st = nodes.status();
  ASSERT_TRUE(st) << render(st.error());
  for (auto& m : st->members)
    if (m.name == "node-2")
      before = m.incarnation;
  driver->signal(SIGSTOP);
  ASSERT_FALSE(nodes.partition(2));
  ASSERT_FALSE(nodes.wait_for(
    [](const cluster_status& s) { return testing::state_of(s, "node-2") == member_state::down; },
    patience));
  driver->signal(SIGCONT);
  auto summary = driver->wait_for_line("vectors: ", std::chrono::seconds(150));
  EXPECT_TRUE(summary) << driver->read_stderr();
  auto code = driver->wait(std::chrono::seconds(30));
  EXPECT_EQ(code ? *code : -1, 0) << driver->read_stderr();
  auto out = driver->stdout_seen();
  EXPECT_NE(out.find("recovered from 1 lost shard(s)"), std::string::npos) << out;
  EXPECT_NE(out.find("trained 3600000 words"), std::string::npos) << out;
  auto read = [](const std::string& path) {
    std::ifstream in{path};
    return std::string{std::istreambuf_iterator<char>{in}, {}};
  };
  EXPECT_EQ(read(dir + ".vec"), read(dir + ".clean.vec"))
    << "the vectors differ from the clean run's";
  ASSERT_FALSE(nodes.heal(2));
  auto readmitted = nodes.wait_for(
    [&](const cluster_status& s) {
      for (auto& m : s.members)
        if (m.name == "node-2")
          return m.state == member_state::up && m.incarnation > before;
      return false;
    },
    std::chrono::seconds(60));
  EXPECT_FALSE(readmitted) << render(readmitted);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".vec");
  std::filesystem::remove(dir + ".clean.vec");
}

} // namespace
} // namespace darcy::test
