// `darcy wals` as a user runs it, with real processes: bad input is one clear error line; a
// trained model answers recommend for known and new users; and a run whose worker node or chief
// node is SIGKILLed, SIGSTOPped or cut off the network (a partition, with every node in a
// network namespace of its own) mid-run ends with the same factors as a clean run. The nodes
// come from darcy_testing's local_cluster.
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/testing/local_cluster.hpp"
#include "stores/checkpoint/matrix_file.hpp"
#include "tests/integration/node_process.hpp"

namespace darcy::test {
namespace {

namespace fs = std::filesystem;

/// 200 users x 120 items, each user with 6..20 items, deterministic.
std::string small_matrix_file(const std::string& name) {
  std::string text;
  uint64_t x = 12345;
  for (int u = 0; u < 200; ++u) {
    int n = 6 + u % 15;
    for (int i = 0; i < n; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      text += "user" + std::to_string(u) + "\tartist" +
              std::to_string((u * 7 + (x >> 33) % 40) % 120) + "\t" +
              std::to_string(1 + (x >> 50) % 300) + "\n";
    }
  }
  return write_temp_file(name, text);
}

std::string fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("darcy_wals_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir.string();
}

double max_difference(const std::string& a, const std::string& b) {
  auto x = stores::read_matrix_file(a);
  auto y = stores::read_matrix_file(b);
  EXPECT_TRUE(x && y) << a << " / " << b;
  if (!x || !y || x->values.size() != y->values.size())
    return 1e9;
  double worst = 0;
  for (size_t i = 0; i < x->values.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(x->values[i] - y->values[i])));
  return worst;
}

std::vector<std::string> train_args(const std::string& data, const std::string& out) {
  return {"wals", "train",     "--data", data,    "--dim", "8",      "--iters",
          "4",    "--workers", "2",      "--out", out,     "--quiet"};
}

/// Waits until `path` exists (the fault fired) and returns the pid it holds.
pid_t await_pid_file(const std::string& path, runtime::child_process& driver) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in{path};
    pid_t pid = 0;
    if (in >> pid && pid > 0)
      return pid;
    if (driver.wait(std::chrono::milliseconds(20)))
      break; // the driver ended before the fault fired
  }
  ADD_FAILURE() << "no fault fired; driver stderr: " << driver.read_stderr();
  return 0;
}

TEST(wals_cli, bad_input_is_one_clear_error_line) {
  auto good = small_matrix_file("wals-good.tsv");
  auto malformed = write_temp_file("wals-malformed.tsv", "u1\ta\t3\nu2\tb\n");
  auto negative = write_temp_file("wals-negative.tsv", "u1\ta\t3\nu2\tb\t-4\n");
  auto empty = write_temp_file("wals-empty.tsv", "\n");
  auto huge = write_temp_file("wals-huge.tsv", "u1\ta\t1e38\nu2\tb\t1\nu1\tb\t2\nu2\ta\t3\n");
  auto out = fresh_dir("bad");
  struct bad_case {
    const char* what;
    std::vector<std::string> args;
    const char* mentions;
  };
  std::vector<bad_case> cases{
    {"malformed line",
     {"wals", "train", "--data", malformed, "--out", out, "--quiet"},
     "wals-malformed.tsv:2: expected row, column and value"},
    {"negative weight",
     {"wals", "train", "--data", negative, "--out", out, "--quiet"},
     ":2: weight -4 must be finite and >= 0"},
    {"empty matrix", {"wals", "train", "--data", empty, "--out", out, "--quiet"}, "no entries"},
    {"dim 0",
     {"wals", "train", "--data", good, "--dim", "0", "--out", out, "--quiet"},
     "dim must be at least 1"},
    {"missing file",
     {"wals", "train", "--data", "/nonexistent/x.tsv", "--out", out, "--quiet"},
     "cannot open /nonexistent/x.tsv"},
    {"no source", {"wals", "train", "--out", out, "--quiet"}, "give --data FILE"},
    {"chief address that does not answer",
     {"wals", "train", "--data", good, "--out", out, "--quiet", "--cluster", "127.0.0.1:1",
      "--timeout-ms", "2000"},
     "no Darcy node answers at 127.0.0.1:1"},
    {"missing model",
     {"wals", "recommend", "--model", "/nonexistent/model", "--user", "x"},
     "no WALS model in /nonexistent/model"},
    // Issue 12, items 2 and 4: limits are named up front instead of a run that never ends.
    {"too many workers in process",
     {"wals", "train", "--data", good, "--out", out, "--quiet", "--workers", "100000"},
     "--workers 100000 is over the limit of"},
    {"too many shards",
     {"wals", "train", "--data", good, "--out", out, "--quiet", "--shards", "100000"},
     "--shards 100000 is over the limit of 1024"},
    {"too large a dim",
     {"wals", "train", "--data", good, "--out", out, "--quiet", "--dim", "100000"},
     "--dim 100000 is over the limit of 4096"},
    // Issue 12, item 3: a weight whose solve would overflow is refused before any token.
    {"huge value with identity weights",
     {"wals", "train", "--data", huge, "--out", out, "--quiet", "--weight", "identity"},
     "over the limit of 1e9"},
    {"huge alpha",
     {"wals", "train", "--data", good, "--out", out, "--quiet", "--alpha", "1e38"},
     "over the limit of 1e9"},
    // Issue 12, item 5: refused before training, not after.
    {"unwritable out",
     {"wals", "train", "--data", good, "--out", good + "/model", "--quiet"},
     "--out: cannot create directory"},
    {"unwritable checkpoint",
     {"wals", "train", "--data", good, "--out", out, "--quiet", "--checkpoint", good + "/ckpt"},
     "--checkpoint: cannot create directory"},
  };
  for (auto& c : cases) {
    auto r = run_darcy(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.what << ": " << r.err;
    EXPECT_EQ(r.err.rfind("darcy: error: ", 0), 0u) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(c.mentions), std::string::npos) << c.what << ": " << r.err;
  }
  auto skip = run_darcy({"wals", "train", "--data", malformed, "--skip-malformed", "--out", out,
                         "--quiet", "--dim", "4", "--iters", "1"});
  EXPECT_EQ(skip.exit_code, 0) << skip.err;
  EXPECT_NE(skip.err.find("skipped 1 malformed lines"), std::string::npos) << skip.err;
  fs::remove_all(out);
}

TEST(wals_cli, trains_then_recommends_for_known_and_new_users) {
  auto data = small_matrix_file("wals-rec.tsv");
  auto out = fresh_dir("rec");
  auto r = run_darcy(train_args(data, out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("loss per sweep:"), std::string::npos) << r.out;
  auto known = run_darcy({"wals", "recommend", "--model", out, "--user", "user3", "-k", "5"});
  ASSERT_EQ(known.exit_code, 0) << known.err;
  EXPECT_NE(known.out.find(" 5  artist"), std::string::npos) << known.out;
  auto cold =
    run_darcy({"wals", "recommend", "--model", out, "--items", "artist1,artist8", "-k", "3"});
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  EXPECT_NE(cold.out.find(" 3  artist"), std::string::npos) << cold.out;
  EXPECT_EQ(cold.out.find("artist1 "), std::string::npos) << "a given item was recommended";
  auto unknown = run_darcy({"wals", "recommend", "--model", out, "--user", "nobody"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("unknown user 'nobody'"), std::string::npos) << unknown.err;
  fs::resize_file(out + "/V.f32", fs::file_size(out + "/V.f32") - 8);
  auto truncated = run_darcy({"wals", "recommend", "--model", out, "--user", "user3"});
  EXPECT_EQ(truncated.exit_code, 1);
  EXPECT_NE(truncated.err.find("V.f32"), std::string::npos) << truncated.err;
  fs::remove_all(out);
}

/// node-0 (the seed), node-1 and node-2, on 127.0.0.1 or each in a network namespace.
std::unique_ptr<testing::local_cluster> start_cluster(bool netns = false) {
  // The nodes' default heartbeat timing, as the drills' token timeouts assume.
  auto c = testing::local_cluster::start({.nodes = 3,
                                          .binary = DARCY_BINARY,
                                          .heartbeat_interval = std::chrono::milliseconds(500),
                                          .heartbeat_timeout = std::chrono::milliseconds(3000),
                                          .netns = netns});
  if (!c) {
    ADD_FAILURE() << render(c.error());
    std::abort();
  }
  return std::move(*c);
}

/// The index of the node whose process is `pid`, or -1.
int node_of(testing::local_cluster& c, pid_t pid) {
  for (size_t i = 0; i < c.size(); ++i)
    if (c.pid(i) == pid)
      return static_cast<int>(i);
  return -1;
}

// Trains `data` in process with 8 factor shards and 2 workers, then on a fresh 3-node cluster
// with `workers` workers and `cluster_args`; the cluster run must end with the in-process
// factors, bit for bit. Returns the cluster run's stdout.
std::string expect_cluster_gives_local_factors(const std::string& data, const std::string& name,
                                               const std::string& workers,
                                               std::vector<std::string> cluster_args) {
  auto reference = fresh_dir(name + "_local");
  auto out = fresh_dir(name + "_cluster");
  auto local = train_args(data, reference);
  local.insert(local.end(), {"--shards", "8"});
  EXPECT_EQ(run_darcy(local).exit_code, 0);
  auto nodes = start_cluster();
  auto remote = train_args(data, out);
  *(std::find(remote.begin(), remote.end(), "--workers") + 1) = workers;
  cluster_args.insert(cluster_args.end(), {"--cluster", runtime::to_string(nodes->seed())});
  remote.insert(remote.end(), cluster_args.begin(), cluster_args.end());
  auto run = run_darcy(remote);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  for (auto file : {"/U.f32", "/V.f32"})
    EXPECT_EQ(max_difference(out + file, reference + file), 0.0) << file;
  fs::remove_all(out);
  fs::remove_all(reference);
  return run.out;
}

// A thousand workers cost about a thousand times one worker's start, not a million messages
// a sweep: they share their node's copy of the matrix and of the factors, and the factor shards
// stay at 8, so the run ends with the factors of a two-worker run in process, bit for bit.
TEST(wals_cli, a_thousand_workers_on_a_cluster_give_the_factors_of_two) {
  auto data = small_matrix_file("wals-thousand.tsv");
  auto out = expect_cluster_gives_local_factors(data, "thousand", "1000", {});
  EXPECT_NE(out.find("with 1000 workers and 8 factor shards"), std::string::npos) << out;
}

// With more factor shards than rows, some shards own no row of a side: their views are empty
// and the remote workers' node caches must still take them, so the cluster run ends with the
// in-process factors, bit for bit.
TEST(wals_cli, shards_that_own_no_row_serve_remote_workers) {
  auto data = write_temp_file("wals-tiny.tsv", "u1\ta\t3\nu2\tb\t1\nu3\ta\t2\nu1\tc\t5\n");
  expect_cluster_gives_local_factors(data, "tiny", "2", {"--shards", "8"});
  fs::remove(data);
}

// Remote workers read each shard's side in chunks of rows (16 MiB by default; 3 rows here, so
// that every side takes several rounds), and the driver fetches the factors the same way: the
// cluster run still ends with the in-process factors, bit for bit.
TEST(wals_cli, sides_read_a_few_rows_a_message_give_the_factors_of_one_message) {
  auto data = small_matrix_file("wals-chunks.tsv");
  expect_cluster_gives_local_factors(data, "chunks", "2",
                                     {"--shards", "8", "--view-chunk-rows", "3"});
  fs::remove(data);
}

/// A clean in-process run, a 3-node cluster, and a faulty driver run against it.
struct fault_drill {
  explicit fault_drill(const std::string& name, bool netns = false)
    : data(small_matrix_file("wals-" + name + ".tsv")),
      clean(fresh_dir("clean_" + name)),
      out(fresh_dir("kill_" + name)),
      pid_file(out + ".pid"),
      nodes(start_cluster(netns)) {
    fs::remove(pid_file);
    EXPECT_EQ(run_darcy(train_args(data, clean)).exit_code, 0);
  }
  ~fault_drill() {
    fs::remove_all(out);
    fs::remove_all(clean);
    fs::remove(pid_file);
  }

  /// Starts `darcy wals train --cluster SEED ... FAULT_ARGS --fault-pid-file F`.
  caf::expected<runtime::child_process> start_driver(std::vector<std::string> fault_args) {
    auto args = train_args(data, out);
    args.insert(args.begin(), DARCY_BINARY);
    args.insert(args.end(), {"--cluster", runtime::to_string(nodes->seed())});
    args.insert(args.end(), fault_args.begin(), fault_args.end());
    args.insert(args.end(), {"--fault-pid-file", pid_file});
    return runtime::child_process::start(args);
  }

  /// The driver exits 0 and its factors equal the clean run's to 1e-6.
  void expect_clean_result(runtime::child_process& driver) {
    auto code = driver.wait(std::chrono::seconds(120));
    ASSERT_TRUE(code) << "driver still running";
    ASSERT_EQ(*code, 0) << driver.read_stderr();
    for (auto file : {"/U.f32", "/V.f32"})
      EXPECT_LT(max_difference(out + file, clean + file), 1e-6) << file;
  }

  /// Runs the chief on the seed and workers on node-1 and node-2; the worker given block 1 of
  /// sweep 1 drops it, and `fault` strikes its node; `after` runs once the driver ended with
  /// the clean result (a stopped node resumed, a partition healed). Returns the node's index.
  int fault_the_worker_node_holding_block_1(const std::function<caf::error(size_t)>& fault,
                                            const std::function<caf::error(size_t)>& after,
                                            const std::string& token_timeout_ms) {
    auto driver = start_driver({"--chief-node", "node-0", "--worker-nodes", "node-1,node-2",
                                "--fault-drop-block", "1", "--fault-drop-sweep", "1",
                                "--token-timeout-ms", token_timeout_ms});
    EXPECT_TRUE(driver) << render(driver.error());
    if (!driver)
      return -1;
    auto pid = await_pid_file(pid_file, *driver);
    auto victim = node_of(*nodes, pid);
    EXPECT_GT(victim, 0) << "the fault fired in pid " << pid << ", not a worker node";
    if (victim <= 0)
      return -1;
    EXPECT_FALSE(fault(static_cast<size_t>(victim)));
    expect_clean_result(*driver);
    if (after) {
      EXPECT_FALSE(after(static_cast<size_t>(victim)));
    }
    return victim;
  }

  /// The incarnation of node i's member, or 0.
  uint64_t incarnation(size_t i) {
    auto st = nodes->status();
    if (st)
      for (auto& m : st->members)
        if (m.name == nodes->name(i))
          return m.incarnation;
    return 0;
  }

  std::string event_log() const {
    std::ifstream log{out + "/checkpoints/events.log"};
    return {std::istreambuf_iterator<char>{log}, {}};
  }

  std::string data, clean, out, pid_file;
  std::unique_ptr<testing::local_cluster> nodes;
};

TEST(wals_cli, worker_node_sigkilled_mid_block_gives_the_clean_result) {
  fault_drill drill{"worker"};
  drill.fault_the_worker_node_holding_block_1([&](size_t i) { return drill.nodes->kill(i); }, {},
                                              "20000");
  auto log = drill.event_log();
  // Re-issued on the connection loss or on the registry's down event, whichever came first.
  EXPECT_NE(log.find("down 1 rows 1 0"), std::string::npos) << log;
}

TEST(wals_cli, stopped_worker_node_is_given_up_at_its_down_event_not_at_the_token_timeout) {
  fault_drill drill{"stopped"};
  // A token timeout far beyond ctest's limit: only the registry's down event can save the run.
  drill.fault_the_worker_node_holding_block_1([&](size_t i) { return drill.nodes->pause(i); },
                                              [&](size_t i) { return drill.nodes->resume(i); },
                                              "3600000");
  auto log = drill.event_log();
  EXPECT_NE(log.find(" member_down 1 rows 1 0"), std::string::npos) << log;
  EXPECT_EQ(log.find(" timeout "), std::string::npos) << log;
}

TEST(wals_cli, chief_node_sigkilled_mid_sweep_restarts_from_the_checkpoint) {
  fault_drill drill{"chief"};
  auto driver = drill.start_driver(
    {"--chief-node", "node-1", "--worker-nodes", "node-0,node-2", "--fault-stall-sweep", "2"});
  ASSERT_TRUE(driver) << render(driver.error());
  auto pid = await_pid_file(drill.pid_file, *driver);
  ASSERT_EQ(pid, drill.nodes->pid(1)) << "the chief should have run on node-1";
  ASSERT_FALSE(drill.nodes->kill(1));
  auto summary = driver->wait_for_line("trained", std::chrono::seconds(120));
  ASSERT_TRUE(summary) << driver->read_stderr();
  EXPECT_NE(summary->find("chief restarted 1 time(s)"), std::string::npos) << *summary;
  drill.expect_clean_result(*driver);
  auto log = drill.event_log();
  EXPECT_NE(log.find(" stall 2 cols"), std::string::npos) << log;
  EXPECT_NE(log.find(" restore 1 rows"), std::string::npos) << log;
}

// A partition, not a stopped process: the cut-off worker node keeps running and its connections
// stay open, so only the missed heartbeats tell. Its block is re-issued at the down event, the
// run ends with the clean factors, and once the link is back the node is re-admitted under a
// new incarnation, its old actors fenced.
TEST(wals_cli, partitioned_worker_node_is_given_up_and_the_result_is_the_clean_one) {
  if (!runtime::netns_network::available())
    GTEST_SKIP() << "network namespaces need root and iproute2";
  fault_drill drill{"partitioned_worker", true};
  uint64_t before = 0;
  auto victim = drill.fault_the_worker_node_holding_block_1(
    [&](size_t i) {
      before = drill.incarnation(i);
      return drill.nodes->partition(i);
    },
    [&](size_t i) { return drill.nodes->heal(i); }, "3600000");
  ASSERT_GT(victim, 0);
  auto log = drill.event_log();
  EXPECT_NE(log.find(" member_down 1 rows 1 0"), std::string::npos) << log;
  EXPECT_EQ(log.find(" timeout "), std::string::npos) << log;
  auto readmitted = drill.nodes->wait_for(
    [&](const cluster_status& st) {
      for (auto& m : st.members)
        if (m.name == drill.nodes->name(static_cast<size_t>(victim)))
          return m.state == member_state::up && m.incarnation > before;
      return false;
    },
    std::chrono::seconds(60));
  EXPECT_FALSE(readmitted) << render(readmitted);
}

// The chief's node cut off mid-sweep: the chief is restarted elsewhere from the checkpoint, and
// when the link is back the old chief, re-admitted under a new incarnation, must not disturb
// the run: the factors are the clean ones.
TEST(wals_cli, partitioned_chief_node_restarts_the_chief_and_the_result_is_the_clean_one) {
  if (!runtime::netns_network::available())
    GTEST_SKIP() << "network namespaces need root and iproute2";
  fault_drill drill{"partitioned_chief", true};
  auto driver = drill.start_driver(
    {"--chief-node", "node-1", "--worker-nodes", "node-0,node-2", "--fault-stall-sweep", "2"});
  ASSERT_TRUE(driver) << render(driver.error());
  auto pid = await_pid_file(drill.pid_file, *driver);
  ASSERT_EQ(pid, drill.nodes->pid(1)) << "the chief should have run on node-1";
  ASSERT_FALSE(drill.nodes->partition(1));
  auto summary = driver->wait_for_line("trained", std::chrono::seconds(120));
  ASSERT_TRUE(summary) << driver->read_stderr();
  EXPECT_NE(summary->find("chief restarted 1 time(s)"), std::string::npos) << *summary;
  ASSERT_FALSE(drill.nodes->heal(1));
  drill.expect_clean_result(*driver);
  auto log = drill.event_log();
  EXPECT_NE(log.find(" restore 1 rows"), std::string::npos) << log;
}

} // namespace
} // namespace darcy::test
