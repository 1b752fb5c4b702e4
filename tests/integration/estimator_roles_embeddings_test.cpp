// The distributed Estimator's drills on jobs whose tables live in the embedding service (the
// chief's master, the ps node's shards): brown-genre on a small corpus written here, and ctr. A
// worker node killed is restarted; a killed chief resumes with its rows; a ps killed with its
// shards, or declared down while alive and re-admitted, is recovered with its shards restored; a
// ctr stream job trains its partitions, syncs serving, and goes on from its last sync after its
// worker, its ps (tables in LevelDB) and its chief are killed.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/ctr/ctr_input.hpp"
#include "ops/ctr/ctr_row_stream.hpp"
#include "ops/estimator/export/export.hpp"
#include "ops/session.hpp"
#include "runtime/host_port.hpp"
#include "runtime/http/http_client.hpp"
#include "runtime/process/process.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/checkpoint/checkpoint_io.hpp"
#include "stores/embedding/embedding_part.hpp"
#include "tests/integration/estimator_job.hpp"
#include "tests/integration/node_process.hpp"
#include "tests/support/genre_corpus.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

namespace fs = std::filesystem;

TEST(estimator_roles_embeddings, a_worker_node_killed_mid_brown_genre_training_is_restarted) {
  temp_dir dir{"estimator_roles_kill_worker_de"};
  job j{dir.path(), 3000, brown_genre_app(dir.path() + "/brown")};
  kill_a_worker_and_complete(j);
  j.expect_hosts_exit();
}

TEST(estimator_roles_embeddings, a_brown_genre_chief_killed_resumes_with_its_embedding_rows) {
  temp_dir dir{"estimator_roles_kill_chief_de"};
  kill_the_chief_and_resume(dir.path(), brown_genre_app(dir.path() + "/brown"), true);
}

TEST(estimator_roles_embeddings, a_ctr_ps_declared_down_while_alive_is_recovered_once_readmitted) {
  temp_dir dir{"estimator_roles_pause_ps_ctr"};
  job j{dir.path(), 700, ctr_app(dir.path())};
  // Without the fix, the chief waits for another ps-0 than the one re-admitted, and gives up.
  j.extra = {"--ps-rejoin-s", "60"};
  ASSERT_NO_FATAL_FAILURE(start_until_the_first_checkpoint(j));
  auto seed = runtime::parse_host_port(j.address);
  ASSERT_TRUE(seed) << j.address;
  auto client = ops::session::open({.seed = *seed, .name = "roles-test-client", .threads = 1});
  ASSERT_TRUE(client) << render(client.error());
  // Stopped past its heartbeat timeout, the ps is declared down; continued, the same process,
  // at the same address, is re-admitted under a new incarnation and stops the actors of the
  // old one: its parameter server and its embedding shards.
  j.ps->signal(SIGSTOP);
  auto ps_up = [&] {
    auto st = (*client)->status();
    return !st || std::any_of(st->members.begin(), st->members.end(), [](const member_info& m) {
      return m.name == "ps-0" && m.state == member_state::up;
    });
  };
  auto deadline = std::chrono::steady_clock::now() + roles_patience;
  bool declared_down = false;
  while (!(declared_down = !ps_up()) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  j.ps->signal(SIGCONT);
  ASSERT_TRUE(declared_down) << "ps-0 was never declared down";
  auto result = j.chief_result();
  EXPECT_GE(result.value("global_step", uint64_t{0}), j.max_steps) << result.dump();
  EXPECT_EQ(result.value("ps_recoveries", 0), 1) << result.dump();
  auto err = j.chief->read_stderr();
  EXPECT_NE(err.find("resuming from the checkpoint at global step"), std::string::npos) << err;
  EXPECT_NE(err.find("restored "), std::string::npos) << "its shards restored: " << err;
  EXPECT_NE(j.ps->read_stderr().find("declared down and re-admitted"), std::string::npos)
    << j.ps->read_stderr();
  auto evals = j.evaluations();
  ASSERT_FALSE(evals.empty());
  EXPECT_EQ(evals.back()["global_step"], result["global_step"]);
  j.expect_hosts_exit();
}

TEST(estimator_roles_embeddings, a_ctr_job_on_disk_tables_has_its_workers_look_ahead) {
  temp_dir dir{"estimator_roles_ctr_look_ahead"};
  // 26 tables of 50 ids on the ps node, in LevelDB behind memory tiers of 16 rows: most of a
  // step's rows are on disk until the workers' look-ahead brings them in.
  job j{dir.path(), 300, ctr_app(dir.path())};
  j.extra = {"--leveldb",          dir.path() + "/tables",
             "--memory-budget",    "64KiB",
             "--shards",           "1",
             "--prefetch-batches", "4"};
  ASSERT_NO_FATAL_FAILURE(j.start());
  auto result = j.chief_result();
  EXPECT_GE(result.value("global_step", uint64_t{0}), j.max_steps) << result.dump();
  ASSERT_TRUE(result.contains("embeddings")) << result.dump();
  auto& tiers = result["embeddings"];
  EXPECT_GT(tiers.value("prefetched_rows", uint64_t{0}), 0u) << result.dump();
  EXPECT_GE(tiers.value("disk_reads", uint64_t{0}), tiers.value("prefetched_rows", uint64_t{0}))
    << "prefetched rows are disk reads: " << result.dump();
  EXPECT_GT(tiers.value("tier_hits", uint64_t{0}), 0u) << result.dump();
  auto evals = j.evaluations();
  ASSERT_FALSE(evals.empty());
  EXPECT_EQ(evals.back()["global_step"], result["global_step"]);
  j.expect_hosts_exit();
}

TEST(estimator_roles_embeddings, a_ctr_ps_killed_with_its_embedding_shards_is_recovered) {
  temp_dir dir{"estimator_roles_kill_ps_ctr"};
  job j{dir.path(), 700, ctr_app(dir.path())};
  ASSERT_NO_FATAL_FAILURE(start_until_the_first_checkpoint(j));
  j.ps->signal(SIGKILL);
  ASSERT_TRUE(j.ps->wait(roles_patience));
  // The chief names the checkpoint it will resume from once the ps is back; nothing newer can
  // be saved meanwhile (the servers are gone).
  constexpr std::string_view resuming = "resuming from the checkpoint at global step ";
  auto deadline = std::chrono::steady_clock::now() + roles_patience;
  std::string err;
  while ((err = j.chief->read_stderr()).find(resuming) == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto at = err.find(resuming);
  ASSERT_NE(at, std::string::npos) << err;
  auto step = std::stoll(err.substr(at + resuming.size()));
  auto [saved_step, saved] = newest_checkpoint(j.dir + "/model");
  ASSERT_EQ(saved_step, step);
  ASSERT_GT(saved.size(), 26u) << "the checkpoint holds the tables' rows";
  j.ps.emplace(j.launch(j.argv(job::spec(j.address), "ps", 0)));
  auto result = j.chief_result();
  EXPECT_GE(result.value("global_step", uint64_t{0}), j.max_steps) << result.dump();
  EXPECT_EQ(result.value("ps_recoveries", 0), 1) << result.dump();
  // The embedding service started afresh on the new ps node and was restored: right after the
  // restore it held exactly the checkpoint's rows, and none of them is lost by the end.
  EXPECT_NE(j.chief->read_stderr().find("restored " + std::to_string(saved.size()) +
                                        " embedding rows from the checkpoint at global step " +
                                        std::to_string(step)),
            std::string::npos)
    << j.chief->read_stderr();
  auto [final_step, final_rows] = newest_checkpoint(j.dir + "/model");
  EXPECT_EQ(final_step, result["global_step"].get<int64_t>());
  for (auto& [key, row] : saved)
    EXPECT_EQ(final_rows.count(key), 1u) << key.first << " " << key.second << " was lost";
  auto evals = j.evaluations();
  ASSERT_FALSE(evals.empty());
  EXPECT_EQ(evals.back()["global_step"], result["global_step"]);
  EXPECT_GT(evals.back()["auc_roc"].get<double>(), 0.55);
  j.expect_hosts_exit();
}

TEST(estimator_roles_embeddings, a_stream_job_trains_its_partitions_and_serving_follows_its_chief) {
  temp_dir dir{"estimator_roles_stream"};
  auto sync_dir = dir.path() + "/sync";
  auto exported = dir.path() + "/serving/ctr";
  auto port = runtime::free_loopback_port();
  ASSERT_NE(port, 0);
  job j{dir.path(), 1500,
        ctr_stream_app(sync_dir, {"--export", exported, "--sync-to",
                                  "http://127.0.0.1:" + std::to_string(port) + "/v1/models/ctr"})};
  ASSERT_NO_FATAL_FAILURE(j.start(false)); // a stream job has no evaluator
  // Serving starts on the chief's export and takes its pushes from then on.
  auto export_line = j.chief->wait_for_line("\"exported\"", roles_patience);
  ASSERT_TRUE(export_line) << j.chief->read_stderr();
  auto serve = j.launch({DARCY_BINARY, "serve", "--exports", dir.path() + "/serving", "--listen",
                         "127.0.0.1:" + std::to_string(port), "--http-threads", "2"});
  ASSERT_TRUE(serve.wait_for_line("listening", roles_patience)) << serve.read_stderr();
  auto result = j.chief_result();
  EXPECT_GE(result.value("global_step", uint64_t{0}), j.max_steps) << result.dump();
  EXPECT_EQ(result.value("workers", 0), 2);
  for (auto& report : j.worker_reports())
    EXPECT_GT(report.value("steps", uint64_t{0}), 0u)
      << "each worker trains its partition " << report.dump();
  // The chief's syncs: a chain in the sync folder whose last link is its last line's, at the
  // final global step, with the dense weights of that step.
  std::vector<nlohmann::json> syncs;
  std::istringstream lines{j.chief->stdout_seen()};
  for (std::string l; std::getline(lines, l);)
    if (l.find("\"sync_checkpoint\"") != std::string::npos)
      syncs.push_back(nlohmann::json::parse(l));
  ASSERT_GE(syncs.size(), 2u) << j.chief->stdout_seen();
  EXPECT_TRUE(syncs.front()["sync_full"].get<bool>());
  auto head = stores::checkpoint_dir{sync_dir}.read_manifest();
  ASSERT_TRUE(head) << render(head.error());
  EXPECT_EQ(head->checkpoint, syncs.back()["sync_checkpoint"]);
  EXPECT_EQ(head->step, result["global_step"].get<int64_t>());
  EXPECT_EQ(head->embeddings.size(), 26u);
  auto dense = stores::checkpoint_dir{sync_dir + "/dense"}.read_manifest();
  ASSERT_TRUE(dense) << render(dense.error());
  EXPECT_EQ(dense->step, head->step);
  EXPECT_EQ(syncs.back()["sync_status"], 200) << "the last sync reached serving";
  j.expect_hosts_exit();

  // What serving answers is the training cluster's model as of its last sync: the export
  // following the chief's sync folder.
  auto described = nlohmann::json::parse(runtime::http_body(
    runtime::http_exchange(port, runtime::http_request_text("GET", "/v1/models/ctr", ""))));
  EXPECT_EQ(described["sync"]["checkpoint"], head->checkpoint) << described.dump();
  EXPECT_EQ(described["sync"]["dense_step"], head->step);
  auto stream = ops::ctr::open_ctr_stream("generate", {.generator = {.seed = 99, .max_ids = 50}});
  ASSERT_TRUE(stream);
  auto probe = ops::ctr::ctr_row_stream(std::move(*stream), true, std::chrono::milliseconds{100})
                 ->next_window(16);
  ASSERT_TRUE(probe && probe->table);
  std::vector<uint32_t> rows(16);
  std::iota(rows.begin(), rows.end(), 0u);
  auto body = nlohmann::json{{"instances", ops::ctr::ctr_instances(*probe->table, rows)}}.dump();
  auto served = nlohmann::json::parse(runtime::http_body(runtime::http_exchange(
    port, runtime::http_request_text("POST", "/v1/models/ctr:predict", "", body))));
  auto reference = ops::estimator::exported_model::load(exported);
  ASSERT_TRUE(reference) << render(reference.error());
  ASSERT_TRUE((*reference)->follow(sync_dir));
  auto want = (*reference)
                ->predict(ops::estimator::gather(*probe->table,
                                                 std::vector<size_t>(rows.begin(), rows.end())));
  ASSERT_TRUE(want) << render(want.error());
  ASSERT_EQ(served["predictions"].size(), rows.size()) << served.dump();
  for (size_t r = 0; r < rows.size(); ++r)
    EXPECT_NEAR(served["predictions"][r][0].get<double>(), (*want)(Eigen::Index(r), 0), 1e-6) << r;
  serve.signal(SIGTERM);
  EXPECT_TRUE(serve.wait(roles_patience));
}

/// A command-line prefix that runs a program in a mount namespace of its own where `folder` is
/// an empty tmpfs: a host that shares nothing with this one but the network. Empty (the folder
/// shared) without root or unshare.
std::vector<std::string> hide_folder(const std::string& folder) {
  if (::geteuid() != 0 || !fs::exists("/usr/bin/unshare"))
    return {};
  return {"/usr/bin/unshare",
          "--mount",
          "--propagation",
          "private",
          "/bin/sh",
          "-c",
          "mount -t tmpfs tmpfs \"$0\" && exec \"$@\"",
          folder};
}

/// The global step of the first line of `p`'s standard error after `text`, waiting for it.
uint64_t step_after(runtime::child_process& p, std::string_view text) {
  auto deadline = std::chrono::steady_clock::now() + roles_patience;
  std::string err;
  while ((err = p.read_stderr()).find(text) == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto at = err.find(text);
  EXPECT_NE(at, std::string::npos) << err;
  return at == std::string::npos ? 0 : std::stoull(err.substr(at + text.size()));
}

/// Waits for the chief's first sync line past global step `step`.
void await_sync_after(job& j, uint64_t step) {
  auto deadline = std::chrono::steady_clock::now() + roles_patience;
  while (std::chrono::steady_clock::now() < deadline) {
    std::istringstream lines{j.chief->stdout_seen()};
    for (std::string l; std::getline(lines, l);)
      if (l.find("\"sync_checkpoint\"") != std::string::npos &&
          nlohmann::json::parse(l)["global_step"].get<uint64_t>() > step)
        return;
    j.chief->wait_for_line("\x01", std::chrono::milliseconds(50)); // reads what came
  }
  FAIL() << "no sync after global step " << step << ": " << j.chief->read_stderr();
}

/// The checkpoint folders ("ckpt-*") directly under `root`.
std::set<std::string> checkpoint_folders(const std::string& root) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator{root, ec}; !ec && it != fs::directory_iterator{};
       it.increment(ec))
    if (auto name = it->path().filename().string(); name.rfind("ckpt-", 0) == 0)
      out.insert(name);
  return out;
}

/// The chief's sync lines so far.
size_t syncs_written(job& j) {
  j.chief->wait_for_line("\x01", std::chrono::milliseconds(50)); // reads what came
  std::istringstream lines{j.chief->stdout_seen()};
  size_t n = 0;
  for (std::string l; std::getline(lines, l);)
    n += l.find("\"sync_checkpoint\"") != std::string::npos;
  return n;
}

/// The global step of the newest sync under `sync_dir`.
int64_t newest_sync(const std::string& sync_dir) {
  auto head = stores::checkpoint_dir{sync_dir}.read_manifest();
  EXPECT_TRUE(head) << render(head.error());
  return head ? head->step : -1;
}

TEST(estimator_roles_embeddings,
     a_stream_job_goes_on_from_its_last_sync_after_a_worker_its_ps_and_its_chief_are_killed) {
  temp_dir dir{"estimator_roles_stream_kills"};
  auto sync_dir = dir.path() + "/sync";
  // The tables in LevelDB on the ps node, behind memory tiers smaller than their rows.
  // Exported once, before the first sync: no resume exports again.
  auto exports = dir.path() + "/served/ctr";
  auto app = ctr_stream_app(sync_dir, {"--leveldb", dir.path() + "/tables", "--memory-budget",
                                       "64KiB", "--shards", "1", "--export", exports});
  int64_t last_sync = 0;
  {
    job j{dir.path(), 1000000, app};
    // No periodic checkpoint: the syncs are the newer state every resume below goes on from.
    j.checkpoint_steps = 1000000;
    // The ps sees a folder of its own where the job's is: its parts of the syncs and
    // checkpoints, and its tables, are on its disk alone.
    j.ps_prefix = hide_folder(dir.path());
    ASSERT_NO_FATAL_FAILURE(j.start(false));
    ASSERT_NO_FATAL_FAILURE(await_sync_after(j, 0));
    // A worker node killed: its worker starts again on the other node, at the stream's
    // position of the global step (32 rows a step).
    j.workers[1].signal(SIGKILL);
    constexpr std::string_view joined = "worker 1: joined at global step ";
    auto step = step_after(j.workers[0], joined);
    ASSERT_GT(step, 0u);
    EXPECT_NE(
      j.workers[0].read_stderr().find(std::string{joined} + std::to_string(step) +
                                      ", its input from position " + std::to_string(step * 32)),
      std::string::npos)
      << j.workers[0].read_stderr();
    // Its node started again, as a pod would be: a ps recovery waits for every task.
    j.workers[1] = j.launch(j.argv(job::spec(j.address), "worker", 1));
    // The ps node killed with the tables' shards (in LevelDB on its own disk): nothing more can
    // be synced, and the job goes on from the last sync, not from the older checkpoint, on a
    // ps whose disk is empty.
    if (!j.ps_prefix.empty()) {
      auto ps_root = "/proc/" + std::to_string(j.ps->pid()) + "/root" + dir.path();
      EXPECT_FALSE(fs::is_empty(ps_root + "/tables"));
      // Once retention has removed chains here, the ps's disk holds no more of the sync
      // folder than the chief's does (and the one a sync may be writing): the chains removed
      // here went there too.
      auto deadline = std::chrono::steady_clock::now() + roles_patience;
      while (syncs_written(j) <= checkpoint_folders(sync_dir).size() + 3 &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      auto here = checkpoint_folders(sync_dir);
      ASSERT_GT(syncs_written(j), here.size() + 3);
      auto there = checkpoint_folders(ps_root + "/sync");
      EXPECT_LE(there.size(), here.size() + 1) << there.size() << " folders on the ps";
    }
    j.ps->signal(SIGKILL);
    ASSERT_TRUE(j.ps->wait(roles_patience));
    auto synced = newest_sync(sync_dir);
    ASSERT_GT(synced, 0);
    j.ps.emplace(j.launch(j.ps_argv(job::spec(j.address))));
    auto resumed = step_after(*j.chief, "chief: resumed from the sync at global step ");
    // A ps killed after the chief wrote a sync's manifest and before it fetched the sync's
    // parts leaves that sync unrestorable: the chief goes back to the one before, and says so.
    if (j.chief->read_stderr().find("never reached this host") == std::string::npos)
      EXPECT_EQ(resumed, static_cast<uint64_t>(synced));
    else
      EXPECT_LT(resumed, static_cast<uint64_t>(synced));
    ASSERT_NO_FATAL_FAILURE(await_sync_after(j, resumed));
    // A checkpoint of the resumed state came first: model_dir goes on from there too.
    auto checkpoint = stores::checkpoint_dir{dir.path() + "/model"}.read_manifest();
    ASSERT_TRUE(checkpoint) << render(checkpoint.error());
    EXPECT_GE(checkpoint->step, resumed);
    // The chief killed: the job started again goes on from its last sync.
    j.chief->signal(SIGKILL);
    ASSERT_TRUE(j.chief->wait(roles_patience));
    for (auto* p : {&*j.ps, &j.workers[0]})
      EXPECT_TRUE(p->wait(roles_patience)) << "a ps or worker process outlived its chief";
    last_sync = newest_sync(sync_dir);
    ASSERT_GT(last_sync, static_cast<int64_t>(resumed));
  }
  job again{dir.path(), static_cast<uint64_t>(last_sync) + 200, app};
  again.checkpoint_steps = 1000000;
  again.ps_prefix = hide_folder(dir.path());
  ASSERT_NO_FATAL_FAILURE(again.start(false));
  auto result = again.chief_result();
  EXPECT_EQ(result.value("resumed_from", int64_t{-1}), last_sync) << result.dump();
  EXPECT_GE(result.value("global_step", int64_t{0}), last_sync + 200) << result.dump();
  EXPECT_NE(again.chief->read_stderr().find("chief: resumed from the sync at global step " +
                                            std::to_string(last_sync)),
            std::string::npos)
    << again.chief->read_stderr();
  // Its workers start after the rows trained by the last sync.
  for (auto& w : again.workers)
    EXPECT_GE(step_after(w, "joined at global step "), static_cast<uint64_t>(last_sync));
  EXPECT_EQ(newest_sync(sync_dir), result["global_step"].get<int64_t>());
  again.expect_hosts_exit();
  size_t versions = 0;
  for (auto& entry : fs::directory_iterator{exports})
    versions += entry.is_directory();
  EXPECT_EQ(versions, 1u);
  // The tables hold rows (values and slots) of twice the memory budget, and their last
  // checkpoint came back to the chief's disk.
  auto [step, rows] = newest_checkpoint(dir.path() + "/model");
  size_t bytes = 0;
  for (auto& [key, row] : rows)
    bytes += row.size() * sizeof(float);
  EXPECT_GE(bytes, 2u * 16384) << rows.size() << " rows";
}

TEST(estimator_roles_embeddings, a_stream_that_is_malformed_or_ends_stops_the_job_saying_where) {
  temp_dir dir{"estimator_roles_stream_bad"};
  auto file = dir.path() + "/stream.tsv";
  auto data = run_darcy({"data", "ctr", "--rows", "3000", "--max-ids", "50", "--out", file});
  ASSERT_EQ(data.exit_code, 0) << data.err;
  {
    std::ifstream in{file};
    std::string text{std::istreambuf_iterator<char>(in), {}}, out;
    std::istringstream lines{text};
    size_t n = 0;
    for (std::string l; std::getline(lines, l);)
      out += (++n == 1500 ? "not a row" : l) + "\n";
    std::ofstream{file, std::ios::trunc} << out;
  }
  struct bad_stream {
    const char* what;
    std::vector<std::string> source;
    std::string said;
  };
  for (auto& c : std::vector<bad_stream>{{"a malformed line", {"--stream", file}, file + ":1500: "},
                                         {"a generator that ends",
                                          {"--stream", "generate", "--stream-rows", "2000"},
                                          "its input ended at global step "}}) {
    SCOPED_TRACE(c.what);
    auto run_dir = dir.path() + "/" + std::to_string(c.source.size());
    auto app = ctr_stream_app(run_dir + "/sync");
    app.erase(app.begin() + 1, app.begin() + 5); // --stream generate --max-ids 50
    app.insert(app.begin() + 1, c.source.begin(), c.source.end());
    job j{run_dir, 100000, app};
    ASSERT_NO_FATAL_FAILURE(j.start(false));
    auto code = j.chief->wait(roles_patience);
    ASSERT_TRUE(code) << "the chief outlived its failing workers";
    EXPECT_NE(*code, 0);
    EXPECT_NE(j.chief->read_stderr().find(c.said), std::string::npos) << j.chief->read_stderr();
    for (auto* p : {&*j.ps, &j.workers[0], &j.workers[1]})
      EXPECT_TRUE(p->wait(roles_patience)) << "a ps or worker process outlived its chief";
  }
}

} // namespace
} // namespace darcy::test
