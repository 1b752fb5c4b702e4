// The distributed Estimator's roles as real `darcy` processes on 127.0.0.1, for the roles'
// integration tests: a job's processes (chief, ps, two workers, evaluator), each given its role
// only through DARCY_CONFIG, the apps they run, and the drills several tests share.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/process/process.hpp"
#include "tests/integration/node_process.hpp"

namespace darcy::test {

inline constexpr auto roles_patience = std::chrono::seconds(120);

/// The app and its flags: Fashion-MNIST's DNN by default.
std::vector<std::string> fashion_mnist_app();

/// brown-genre on a corpus of 40 documents of 4 sentences in two categories (genre_corpus.hpp).
std::vector<std::string> brown_genre_app(const std::string& dir);

/// ctr's DLRM, small, on generated Criteo-format files written into `dir`: 26 tables in the
/// embedding service, whose shards live on the ps node.
std::vector<std::string> ctr_app(const std::string& dir);

/// ctr's DLRM on the generated stream as a distributed job, small, syncing every 0.2 s into
/// `sync_dir` (a full sync every 3), then `more`.
std::vector<std::string> ctr_stream_app(const std::string& sync_dir,
                                        const std::vector<std::string>& more = {});

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

/// Starts the job and waits for the chief's first checkpoint: training is under way, with most
/// of its steps ahead.
void start_until_the_first_checkpoint(job& j);

/// Kills a worker node once training is under way; the job must still complete.
void kill_a_worker_and_complete(job& j);

using embedding_rows = std::map<std::pair<std::string, std::string>, std::vector<float>>;

/// The step of the newest checkpoint under `model_dir`, and every row of its dynamic
/// embeddings by (embedding, key): values, then optimizer slots.
std::pair<int64_t, embedding_rows> newest_checkpoint(const std::string& model_dir);

/// Kills the chief once the first checkpoint exists, starts the job again, and checks that it
/// resumed from that checkpoint. With `compare_rows`, a run started again with nothing left to
/// train must save exactly the rows of the checkpoint it resumed from: the embedding service
/// was restored, not started empty.
void kill_the_chief_and_resume(const std::string& dir, const std::vector<std::string>& app,
                               bool compare_rows = false);

} // namespace darcy::test
