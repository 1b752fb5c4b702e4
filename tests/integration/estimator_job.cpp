#include "tests/integration/estimator_job.hpp"

#include <filesystem>
#include <thread>

#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/checkpoint/checkpoint_io.hpp"
#include "stores/embedding/embedding_part.hpp"
#include "tests/support/genre_corpus.hpp"

namespace darcy::test {

std::vector<std::string> fashion_mnist_app() {
  return {"fashion-mnist", "--hidden", "32", "--train-examples", "2000", "--eval-examples", "500"};
}

std::vector<std::string> brown_genre_app(const std::string& dir) {
  write_genre_corpus(dir, 4);
  return {"brown-genre", "--corpus",       dir,    "--passage-words",  "20",   "--batch",
          "8",           "--hash-buckets", "1024", "--bigram-buckets", "4096", "--embedding-dim",
          "8",           "--hidden",       "8"};
}

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

std::vector<std::string> ctr_stream_app(const std::string& sync_dir,
                                        const std::vector<std::string>& more) {
  std::vector<std::string> out{
    "ctr", "--stream",           "generate", "--max-ids",       "50",  "--top",
    "8",   "--bottom",           "8,4",      "--embedding-dim", "4",   "--batch",
    "32",  "--sync-dir",         sync_dir,   "--sync-every",    "0.2", "--full-every",
    "3",   "--dense-sync-every", "0"};
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

void start_until_the_first_checkpoint(job& j) {
  ASSERT_NO_FATAL_FAILURE(j.start());
  auto deadline = std::chrono::steady_clock::now() + roles_patience;
  while (!stores::checkpoint_dir{j.dir + "/model"}.read_manifest() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(stores::checkpoint_dir{j.dir + "/model"}.read_manifest()) << j.chief->read_stderr();
}

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

void kill_the_chief_and_resume(const std::string& dir, const std::vector<std::string>& app,
                               bool compare_rows) {
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

} // namespace darcy::test
