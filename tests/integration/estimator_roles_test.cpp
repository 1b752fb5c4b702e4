// The distributed Estimator's roles as real `darcy` processes on 127.0.0.1, each role from its
// DARCY_CONFIG, on Fashion-MNIST (from the dataset-fashion-mnist package that `make deps`
// installs): the job trains to the global step while the evaluator exports improvements; a
// worker node SIGKILLed mid-training has its worker restarted elsewhere and the job completes;
// a SIGKILLed chief, started again, resumes from its last checkpoint; a SIGKILLed ps started
// again is loaded from the last checkpoint and the job completes, and one that does not come
// back stops the chief with what to do.
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
#include "tests/integration/estimator_job.hpp"
#include "tests/integration/node_process.hpp"
#include "tests/support/genre_corpus.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::test {
namespace {

namespace fs = std::filesystem;

constexpr auto data_dir = "/usr/share/datasets/fashion-mnist";

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

TEST_F(estimator_roles, a_worker_node_killed_mid_training_is_restarted_and_the_job_completes) {
  temp_dir dir{"estimator_roles_kill_worker"};
  job j{dir.path(), 5000};
  kill_a_worker_and_complete(j);
}

TEST_F(estimator_roles, a_chief_killed_and_started_again_resumes_from_its_last_checkpoint) {
  temp_dir dir{"estimator_roles_kill_chief"};
  kill_the_chief_and_resume(dir.path(), fashion_mnist_app());
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
