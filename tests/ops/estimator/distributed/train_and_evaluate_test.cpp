// Distributed Estimator roles in one process: one worker through parameter servers trains bit
// for bit as a local estimator; two asynchronous workers reach the global step together while
// the evaluator follows the chief's checkpoints and exports each improvement; a restarted
// chief resumes from its last checkpoint; bad experiments are refused.
#include "ops/estimator/distributed/train_and_evaluate.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "actors/estimator/parameter_server.hpp"
#include "messages/error.hpp"
#include "ops/estimator/export/export.hpp"
#include "tests/support/estimator_blobs.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::ops::estimator {
namespace {

using namespace test::estimator_blobs;

/// Each role's own DNN over the blobs (its columns own their embedding tables).
caf::expected<model_fn> dnn() {
  return dnn_model(blob_options());
}

class train_and_evaluate_test : public test::system_fixture {
protected:
  train_spec training(std::shared_ptr<example_table> data, uint64_t max_steps) {
    return {.input = [data](size_t worker) { return input(data, 0, 1 + worker); },
            .max_steps = max_steps};
  }
  eval_spec accuracy(std::shared_ptr<example_table> data, const std::string& exports) {
    return {.input = input(data, 1),
            .metric = "accuracy",
            .higher_is_better = true,
            .export_dir = exports};
  }
};

TEST_F(train_and_evaluate_test, one_worker_through_parameter_servers_trains_as_a_local_estimator) {
  auto data = blobs(300, 3);
  auto fn = dnn_model(blob_options({8, 4}));
  ASSERT_TRUE(fn);
  estimator local{*fn, config()};
  ASSERT_TRUE(local.train(input(data, 0), 25));

  std::vector<parameter_server_actor> servers;
  std::vector<std::unique_ptr<test::stop_on_exit>> guards;
  for (uint32_t i = 0; i < 3; ++i) { // more servers than one: the variables are sharded
    servers.push_back(
      sys.spawn(actors::parameter_server, ps_config{i, compute::adam_optimizer(0.02f)}));
    guards.push_back(
      std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(servers.back())));
  }
  parameter_servers client{sys, servers, test::patience};
  auto cfg = config();
  cfg.servers = &client;
  auto fn2 = dnn_model(blob_options({8, 4}));
  estimator remote{*fn2, cfg};
  auto r = remote.train(input(data, 0), 25);
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_EQ(r->global_step, 25u);
  // The servers hold the trained values; pulled into a third estimator they equal the local.
  parameter_servers reader{sys, servers, test::patience};
  auto reader_cfg = config();
  reader_cfg.servers = &reader;
  reader_cfg.chief = false;
  auto fn3 = dnn_model(blob_options({8, 4}));
  estimator pulled{*fn3, reader_cfg};
  ASSERT_FALSE(pulled.build(input(data, 0)));
  EXPECT_EQ(pulled.global_step(), 25u);
  auto a = values_of(local), b = values_of(pulled);
  ASSERT_EQ(a.size(), b.size());
  for (auto& [name, value] : a)
    EXPECT_TRUE(value == b.at(name)) << name << " differs";
}

TEST_F(train_and_evaluate_test, two_workers_reach_the_global_step_and_improvements_are_exported) {
  test::temp_dir dir{"train_and_evaluate"};
  auto train = blobs(600, 1), test_set = blobs(150, 2);
  auto cfg = config(dir.path() + "/model");
  cfg.save_checkpoints_steps = 40;
  auto r = train_and_evaluate(sys, dnn, cfg, {}, training(train, 200),
                              accuracy(test_set, dir.path() + "/exports"), {.workers = 2, .ps = 2});
  ASSERT_TRUE(r) << render(r.error());
  // Every step of every worker is one global step.
  ASSERT_EQ(r->worker_steps.size(), 2u);
  EXPECT_EQ(r->worker_steps[0] + r->worker_steps[1], r->global_step);
  EXPECT_GE(r->global_step, 200u);
  EXPECT_GT(r->worker_steps[1], 0u);
  ASSERT_FALSE(r->evaluations.empty());
  auto& last = r->evaluations.back();
  EXPECT_EQ(last.global_step, r->global_step) << "the final checkpoint is evaluated";
  EXPECT_GT(last.metrics.at("accuracy"), 0.95);
  size_t improved = 0;
  for (auto& e : r->evaluations)
    improved += e.improved && !e.exported.empty();
  EXPECT_GE(improved, 1u);
  auto exported = exported_model::load(dir.path() + "/exports");
  ASSERT_TRUE(exported) << render(exported.error());
  size_t versions = 0;
  for ([[maybe_unused]] auto& entry : std::filesystem::directory_iterator(dir.path() + "/exports"))
    ++versions;
  EXPECT_GE(versions, std::min<size_t>(improved, 5)) << "one export per improvement";
}

TEST_F(train_and_evaluate_test, a_restarted_chief_resumes_from_its_last_checkpoint) {
  test::temp_dir dir{"train_and_evaluate_resume"};
  auto train = blobs(300, 4);
  auto cfg = config(dir.path() + "/model");
  auto first = train_and_evaluate(sys, dnn, cfg, {}, training(train, 60), std::nullopt,
                                  {.workers = 2, .ps = 1});
  ASSERT_TRUE(first) << render(first.error());
  auto second = train_and_evaluate(sys, dnn, cfg, {}, training(train, 100), std::nullopt,
                                   {.workers = 2, .ps = 1});
  ASSERT_TRUE(second) << render(second.error());
  EXPECT_EQ(second->worker_steps[0] + second->worker_steps[1],
            second->global_step - first->global_step)
    << "the second run counts on from the first one's checkpoint";
  EXPECT_GE(second->global_step, 100u);
}

TEST_F(train_and_evaluate_test, bad_experiments_are_refused_with_invalid_config) {
  test::temp_dir dir{"train_and_evaluate_bad"};
  auto data = blobs(60, 1);
  struct {
    const char* what;
    std::string model_dir;
    uint64_t max_steps;
    cluster_shape shape;
  } cases[] = {
    {"no model_dir", "", 10, {}},
    {"max_steps 0", dir.path(), 0, {}},
    {"no worker", dir.path(), 10, {.workers = 0, .ps = 1}},
    {"no parameter server", dir.path(), 10, {.workers = 1, .ps = 0}},
  };
  for (auto& c : cases) {
    auto r = train_and_evaluate(sys, dnn, config(c.model_dir), {}, training(data, c.max_steps),
                                std::nullopt, c.shape);
    ASSERT_FALSE(r) << c.what;
    EXPECT_TRUE(is(r.error(), errc::invalid_config)) << c.what << ": " << render(r.error());
  }
}

} // namespace
} // namespace darcy::ops::estimator
