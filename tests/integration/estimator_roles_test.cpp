// The distributed Estimator's roles as real `darcy` processes on 127.0.0.1, each role from its
// DARCY_CONFIG: the job trains to the global step while the evaluator exports improvements; a
// worker node SIGKILLed mid-training has its worker restarted elsewhere and the job completes;
// a SIGKILLed chief, started again, resumes from its last checkpoint; a SIGKILLed ps started
// again is loaded from the last checkpoint and the job completes, and one that does not come
// back stops the chief with what to do; a ps holding embedding shards (ctr) is recovered the
// same way, its shards restored. Fashion-MNIST comes from
// the dataset-fashion-mnist package that `make deps` installs. The same drills run brown-genre
// on a small corpus written here, whose tables live in the embedding service: the chief's
// master, the ps node's shards. A ctr stream job trains its partitions, syncs serving, and goes
// on from its last sync after its worker, its ps (tables in LevelDB) and its chief are killed.
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
#include "runtime/host_port.hpp"
#include "runtime/http/http_client.hpp"
#include "runtime/process/process.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/checkpoint/checkpoint_io.hpp"
#include "stores/embedding/embedding_part.hpp"
#include "tests/integration/node_process.hpp"
#include "tests/support/genre_corpus.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

namespace fs = std::filesystem;

constexpr auto data_dir = "/usr/share/datasets/fashion-mnist";
constexpr auto roles_patience = std::chrono::seconds(120);

/// The app and its flags: Fashion-MNIST's DNN by default.
std::vector<std::string> fashion_mnist_app() {
  return {"fashion-mnist", "--hidden", "32", "--train-examples", "2000", "--eval-examples", "500"};
}

/// brown-genre on a corpus of 40 documents of 4 sentences in two categories (genre_corpus.hpp).
std::vector<std::string> brown_genre_app(const std::string& dir) {
  write_genre_corpus(dir, 4);
  return {"brown-genre", "--corpus",       dir,    "--passage-words",  "20",   "--batch",
          "8",           "--hash-buckets", "1024", "--bigram-buckets", "4096", "--embedding-dim",
          "8",           "--hidden",       "8"};
}

/// ctr's DLRM, small, on generated Criteo-format files written into `dir`: 26 tables in the
/// embedding service, whose shards live on the ps node.
std::vector<std::string> ctr_app(const std::string& dir) {
  for (auto [name, first] : {std::pair{"train.tsv", "0"}, std::pair{"test.tsv", "4000"}}) {
    auto r = run_darcy({"data", "ctr", "--rows", "4000", "--first-row", first, "--max-ids", "50",
                        "--out", dir + "/" + name});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  return {"ctr",
          "--train",
          dir + "/train.tsv",
          "--eval",
          dir + "/test.tsv",
          "--top",
          "8",
          "--bottom",
          "8,4",
          "--embedding-dim",
          "4",
          "--batch",
          "32",
          "--eval-examples",
          "1000"};
}

/// ctr's DLRM on the generated stream as a distributed job, small, syncing every 0.2 s into
/// `sync_dir` (a full sync every 3), then `more`.
std::vector<std::string> ctr_stream_app(const std::string& sync_dir,
                                        const std::vector<std::string>& more = {}) {
  std::vector<std::string> out{
    "ctr", "--stream",           "generate", "--max-ids",       "50",  "--top",
    "8",   "--bottom",           "8,4",      "--embedding-dim", "4",   "--batch",
    "32",  "--sync-dir",         sync_dir,   "--sync-every",    "0.2", "--full-every",
    "3",   "--dense-sync-every", "0"};
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

/// One job's processes: the chief first (on a free port), then the ps, two workers and the
/// evaluator, each given its role only through DARCY_CONFIG.
struct job {
  job(const std::string& dir, uint64_t max_steps,
      std::vector<std::string> app = fashion_mnist_app())
    : dir(dir), max_steps(max_steps), app(std::move(app)) {}

  static std::string spec(const std::string& chief) {
    return R"({"chief": [")" + chief +
           R"("], "ps": ["127.0.0.1:0"], "worker": ["127.0.0.1:0", "127.0.0.1:0"],
              "evaluator": ["127.0.0.1:0"]})";
  }

  std::vector<std::string> argv(const std::string& cluster, const std::string& type,
                                size_t index) const {
    auto config = nlohmann::json{{"cluster", nlohmann::json::parse(cluster)},
                                 {"task", {{"type", type}, {"index", index}}}};
    std::vector<std::string> out{"/usr/bin/env", "DARCY_CONFIG=" + config.dump(), DARCY_BINARY,
                                 "estimator"};
    out.insert(out.end(), app.begin(), app.end());
    out.insert(out.end(), {"--quiet", "--threads", "1", "--max-steps", std::to_string(max_steps),
                           "--save-checkpoints-steps", std::to_string(checkpoint_steps),
                           "--model-dir", dir + "/model", "--export-dir", dir + "/exports"});
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }

  /// The ps's command line: its role, after ps_prefix.
  std::vector<std::string> ps_argv(const std::string& cluster) const {
    auto out = ps_prefix;
    auto role = argv(cluster, "ps", 0);
    out.insert(out.end(), role.begin(), role.end());
    return out;
  }

  /// Starts every role (the evaluator unless `evaluator` is false); the chief's address goes
  /// into the others' cluster.
  void start(bool evaluator_too = true) {
    chief.emplace(launch(argv(spec("127.0.0.1:0"), "chief", 0)));
    auto line = chief->wait_for_line("listening on", roles_patience);
    ASSERT_TRUE(line) << render(line.error()) << chief->read_stderr();
    address = line->substr(line->rfind(' ') + 1);
    ps.emplace(launch(ps_argv(spec(address))));
    for (size_t i = 0; i < 2; ++i)
      workers.push_back(launch(argv(spec(address), "worker", i)));
    if (evaluator_too)
      evaluator.emplace(launch(argv(spec(address), "evaluator", 0)));
  }

  runtime::child_process launch(const std::vector<std::string>& args) {
    auto p = runtime::child_process::start(args);
    if (!p) {
      ADD_FAILURE() << render(p.error());
      std::abort();
    }
    return std::move(*p);
  }

  /// The chief's final JSON line, after it exited 0.
  nlohmann::json chief_result() {
    auto line = chief->wait_for_line("\"role\":\"chief\"", roles_patience);
    EXPECT_TRUE(line) << chief->read_stderr();
    auto code = chief->wait(roles_patience);
    EXPECT_TRUE(code && *code == 0) << (code ? *code : -1) << " " << chief->read_stderr();
    return line ? nlohmann::json::parse(*line) : nlohmann::json{};
  }

  /// The evaluator's JSON lines, after it exited 0.
  std::vector<nlohmann::json> evaluations() {
    evaluator->wait_for_line("\x01", roles_patience); // reads stdout to its end
    auto code = evaluator->wait(roles_patience);
    EXPECT_TRUE(code && *code == 0) << evaluator->read_stderr();
    std::vector<nlohmann::json> out;
    std::istringstream lines{evaluator->stdout_seen()};
    for (std::string l; std::getline(lines, l);)
      if (l.find("\"role\":\"evaluator\"") != std::string::npos)
        out.push_back(nlohmann::json::parse(l));
    return out;
  }

  /// Each worker node's report of its training (the line it prints when it ends).
  std::vector<nlohmann::json> worker_reports() {
    std::vector<nlohmann::json> out;
    for (auto& w : workers) {
      auto line = w.wait_for_line("\"role\":\"worker\"", roles_patience);
      EXPECT_TRUE(line) << w.read_stderr();
      out.push_back(line ? nlohmann::json::parse(*line) : nlohmann::json{});
    }
    return out;
  }

  /// ps and workers end by themselves once the chief is gone.
  void expect_hosts_exit() {
    for (auto* p : {&*ps, &workers[0], &workers[1]}) {
      auto code = p->wait(roles_patience);
      EXPECT_TRUE(code) << "a ps or worker process outlived its chief";
    }
  }

  std::string dir;
  uint64_t max_steps;
  std::vector<std::string> app;
  uint64_t checkpoint_steps = 100;
  /// What the ps's command line runs in (hide_folder's, for a disk of its own).
  std::vector<std::string> ps_prefix;
  /// Flags every role gets after the others.
  std::vector<std::string> extra;
  std::string address;
  std::optional<runtime::child_process> chief, ps, evaluator;
  std::vector<runtime::child_process> workers;
};

class estimator_roles : public ::testing::Test {
protected:
  void SetUp() override {
    if (!fs::exists(std::string{data_dir} + "/train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "dataset-fashion-mnist is not installed (make deps)";
  }
};

TEST_F(estimator_roles, roles_from_darcy_config_train_to_the_global_step_and_export_improvements) {
  temp_dir dir{"estimator_roles"};
  job j{dir.path(), 300};
  auto summary = dir.path() + "/summary.jsonl";
  j.extra = {"--summary", summary};
  ASSERT_NO_FATAL_FAILURE(j.start());
  auto result = j.chief_result();
  EXPECT_GE(result.value("global_step", 0), 300);
  // The chief's summary has a line per checkpoint with the workers' mean loss since the line
  // before (null where they took no step), and `darcy estimator plot` draws it.
  std::ifstream lines{summary};
  size_t with_loss = 0;
  nlohmann::json last;
  for (std::string line; std::getline(lines, line);) {
    auto l = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(l.is_object()) << line;
    last = l;
    EXPECT_EQ(l["step"], l["global_step"]) << line;
    ASSERT_TRUE(l.contains("loss")) << line;
    if (l["loss"].is_number()) {
      ++with_loss;
      EXPECT_GT(l["loss"].get<double>(), 0) << line;
      EXPECT_LT(l["loss"].get<double>(), 10) << line;
    } else {
      EXPECT_TRUE(l["loss"].is_null()) << line;
    }
  }
  EXPECT_EQ(last["step"], result["global_step"]) << "a line for the final checkpoint";
  EXPECT_GE(with_loss, 1u);
  auto plot = run_darcy({"estimator", "plot", summary, "--out", dir.path() + "/loss"});
  EXPECT_EQ(plot.exit_code, 0) << plot.err;
  EXPECT_TRUE(fs::exists(dir.path() + "/loss.png"));
  EXPECT_EQ(result.value("workers", 0), 2);
  EXPECT_EQ(result.value("resumed_from", -1), 0);
  auto evals = j.evaluations();
  ASSERT_FALSE(evals.empty());
  EXPECT_EQ(evals.back()["global_step"], result["global_step"])
    << "the final checkpoint is evaluated";
  EXPECT_GT(evals.back()["accuracy"].get<double>(), 0.5);
  EXPECT_EQ(evals.front()["exported"], "1") << "the first evaluation is an improvement";
  EXPECT_TRUE(fs::exists(dir.path() + "/exports/1"));
  // Each worker says where its steps' time went. The one that took more of the steps has
  // pulled and pushed in them (a worker that starts late may take none).
  nlohmann::json busiest = nlohmann::json::object();
  for (auto& report : j.worker_reports()) {
    ASSERT_TRUE(report.contains("step_ms")) << report.dump();
    // Six phases, and the dynamic embedding columns' share of two (none in this model).
    EXPECT_EQ(report["step_ms"].size(), 8u) << report.dump();
    EXPECT_EQ(report["step_ms"].value("forward.embedding_lookup", -1.0), 0) << report.dump();
    if (report.value("steps", 0) > busiest.value("steps", 0))
      busiest = report;
  }
  EXPECT_GE(busiest.value("steps", 0), 150) << "300 global steps over 2 workers";
  for (const char* phase : {"input", "pull", "forward", "backward", "update"})
    EXPECT_GT(busiest["step_ms"].value(phase, 0.0), 0) << phase << ": " << busiest.dump();
  j.expect_hosts_exit();
}

/// Starts the job and waits for the chief's first checkpoint: training is under way, with most
/// of its steps ahead.
void start_until_the_first_checkpoint(job& j) {
  ASSERT_NO_FATAL_FAILURE(j.start());
  auto deadline = std::chrono::steady_clock::now() + roles_patience;
  while (!stores::checkpoint_dir{j.dir + "/model"}.read_manifest() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(stores::checkpoint_dir{j.dir + "/model"}.read_manifest()) << j.chief->read_stderr();
}

/// Kills a worker node once training is under way; the job must still complete.
void kill_a_worker_and_complete(job& j) {
  ASSERT_NO_FATAL_FAILURE(start_until_the_first_checkpoint(j));
  j.workers[1].signal(SIGKILL);
  auto result = j.chief_result();
  EXPECT_GE(result.value("global_step", uint64_t{0}), j.max_steps);
  EXPECT_GE(result.value("worker_restarts", 0), 1) << result.dump();
  auto evals = j.evaluations();
  ASSERT_FALSE(evals.empty());
  EXPECT_EQ(evals.back()["global_step"], result["global_step"]);
}

TEST_F(estimator_roles, a_worker_node_killed_mid_training_is_restarted_and_the_job_completes) {
  temp_dir dir{"estimator_roles_kill_worker"};
  job j{dir.path(), 5000};
  kill_a_worker_and_complete(j);
}

TEST(estimator_roles_embeddings, a_worker_node_killed_mid_brown_genre_training_is_restarted) {
  temp_dir dir{"estimator_roles_kill_worker_de"};
  job j{dir.path(), 3000, brown_genre_app(dir.path() + "/brown")};
  kill_a_worker_and_complete(j);
  j.expect_hosts_exit();
}

using embedding_rows = std::map<std::pair<std::string, std::string>, std::vector<float>>;

/// The step of the newest checkpoint under `model_dir`, and every row of its dynamic
/// embeddings by (embedding, key): values, then optimizer slots.
std::pair<int64_t, embedding_rows> newest_checkpoint(const std::string& model_dir) {
  embedding_rows rows;
  auto manifest = stores::checkpoint_dir{model_dir}.read_manifest();
  EXPECT_TRUE(manifest) << render(manifest.error());
  if (!manifest)
    return {-1, rows};
  auto extra = nlohmann::json::parse(manifest->extra, nullptr, false);
  auto name = extra.is_object() ? extra.value("embeddings", std::string{}) : std::string{};
  if (name.empty())
    return {manifest->step, rows};
  auto root = model_dir + "/" + name;
  auto service = stores::checkpoint_dir{root}.read_manifest();
  EXPECT_TRUE(service) << render(service.error());
  for (auto& entry : service ? service->embeddings : std::vector<checkpoint_embedding>{})
    for (auto& file : entry.files)
      EXPECT_FALSE(
        stores::read_shard_file(root, file, entry.config, [&](const stores::row_record& r) {
          auto& out = rows[{entry.config.name, std::string{r.key}}];
          out.assign(r.values.begin(), r.values.end());
          out.insert(out.end(), r.slots.begin(), r.slots.end());
          return caf::error{};
        }));
  return {manifest->step, rows};
}

/// Kills the chief once the first checkpoint exists, starts the job again, and checks that it
/// resumed from that checkpoint. With `compare_rows`, a run started again with nothing left to
/// train must save exactly the rows of the checkpoint it resumed from: the embedding service
/// was restored, not started empty.
void kill_the_chief_and_resume(const std::string& dir, const std::vector<std::string>& app,
                               bool compare_rows = false) {
  uint64_t checkpoint = 0;
  {
    job first{dir, 100000, app};
    ASSERT_NO_FATAL_FAILURE(first.start());
    auto line = first.evaluator->wait_for_line("\"role\":\"evaluator\"", roles_patience);
    ASSERT_TRUE(line) << first.evaluator->read_stderr();
    first.chief->signal(SIGKILL);
    checkpoint = nlohmann::json::parse(*line)["global_step"].get<uint64_t>();
    first.expect_hosts_exit();
    first.evaluator->signal(SIGKILL);
  }
  ASSERT_GT(checkpoint, 0u);
  if (compare_rows) {
    auto [step, killed] = newest_checkpoint(dir + "/model");
    ASSERT_GE(step, static_cast<int64_t>(checkpoint));
    ASSERT_FALSE(killed.empty()) << "the checkpoint holds no embedding row";
    job again{dir, static_cast<uint64_t>(step), app};
    ASSERT_NO_FATAL_FAILURE(again.start());
    auto result = again.chief_result();
    EXPECT_EQ(result.value("resumed_from", int64_t{-1}), step) << result.dump();
    ASSERT_EQ(result.value("global_step", int64_t{-1}), step) << "no step was to be taken";
    auto [saved_step, saved] = newest_checkpoint(dir + "/model");
    EXPECT_EQ(saved_step, step);
    EXPECT_EQ(saved.size(), killed.size());
    EXPECT_TRUE(saved == killed) << "the rows saved after the resume differ from the checkpoint's";
    again.expect_hosts_exit();
    again.evaluator->signal(SIGKILL);
  }
  job second{dir, checkpoint + 300, app};
  ASSERT_NO_FATAL_FAILURE(second.start());
  auto result = second.chief_result();
  EXPECT_GE(result.value("resumed_from", uint64_t{0}), checkpoint) << result.dump();
  EXPECT_GE(result.value("global_step", uint64_t{0}), checkpoint + 300);
  second.expect_hosts_exit();
}

TEST_F(estimator_roles, a_chief_killed_and_started_again_resumes_from_its_last_checkpoint) {
  temp_dir dir{"estimator_roles_kill_chief"};
  kill_the_chief_and_resume(dir.path(), fashion_mnist_app());
}

TEST(estimator_roles_embeddings, a_brown_genre_chief_killed_resumes_with_its_embedding_rows) {
  temp_dir dir{"estimator_roles_kill_chief_de"};
  kill_the_chief_and_resume(dir.path(), brown_genre_app(dir.path() + "/brown"), true);
}

TEST_F(estimator_roles, a_ps_killed_and_started_again_is_loaded_from_the_last_checkpoint) {
  temp_dir dir{"estimator_roles_kill_ps"};
  job j{dir.path(), 1500};
  ASSERT_NO_FATAL_FAILURE(start_until_the_first_checkpoint(j));
  j.ps->signal(SIGKILL);
  ASSERT_TRUE(j.ps->wait(roles_patience));
  // Started again at once, as a pod would be: it joins once the chief has seen it down.
  j.ps.emplace(j.launch(j.argv(job::spec(j.address), "ps", 0)));
  auto result = j.chief_result();
  EXPECT_GE(result.value("global_step", uint64_t{0}), j.max_steps) << result.dump();
  EXPECT_EQ(result.value("ps_recoveries", 0), 1) << result.dump();
  EXPECT_NE(j.chief->read_stderr().find("resuming from the checkpoint at global step"),
            std::string::npos);
  auto evals = j.evaluations();
  ASSERT_FALSE(evals.empty());
  EXPECT_EQ(evals.back()["global_step"], result["global_step"]);
  EXPECT_GT(evals.back()["accuracy"].get<double>(), 0.5);
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

TEST_F(estimator_roles, a_ps_that_does_not_join_again_stops_the_chief_saying_what_to_do) {
  temp_dir dir{"estimator_roles_lose_ps"};
  job j{dir.path(), 100000};
  j.extra = {"--ps-rejoin-s", "1"};
  ASSERT_NO_FATAL_FAILURE(start_until_the_first_checkpoint(j));
  j.ps->signal(SIGKILL);
  auto code = j.chief->wait(roles_patience);
  ASSERT_TRUE(code) << "the chief outlived its parameter server";
  EXPECT_NE(*code, 0);
  auto err = j.chief->read_stderr();
  EXPECT_NE(err.find("the parameter server on ps-0 is gone, and it did not join again within 1 s"),
            std::string::npos)
    << err;
  EXPECT_NE(err.find("resumes from its last checkpoint"), std::string::npos) << err;
  for (auto& w : j.workers)
    EXPECT_TRUE(w.wait(roles_patience)) << "a worker process outlived its chief";
  j.evaluator->signal(SIGKILL);
}

} // namespace
} // namespace darcy::test
