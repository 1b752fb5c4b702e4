// The Estimator: canned models built only on the public API learn a small problem; a run
// resumed from a mid-epoch checkpoint ends with bit-identical variables, or from newer state a
// hook loads after the restore; the hooks stop, save, log and guard; checkpoints of another
// model and bad batches are refused with clear errors.
#include "ops/estimator/estimator.hpp"

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/estimator/canned.hpp"
#include "ops/estimator/export/export.hpp"
#include "runtime/metrics.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "tests/support/estimator_blobs.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops::estimator {
namespace {

namespace ce = compute::estimator;
using namespace test::estimator_blobs;

TEST(estimator, canned_models_learn_the_blobs_and_predict_one_row_per_example) {
  auto train = blobs(600, 1), test = blobs(150, 2);
  struct {
    const char* what;
    caf::expected<model_fn> (*make)(canned_options);
  } cases[] = {
    {"linear", linear_model},
    {"dnn", dnn_model},
    {"wide & deep", dnn_linear_combined_model},
  };
  for (auto& c : cases) {
    auto fn = c.make(blob_options());
    ASSERT_TRUE(fn) << c.what;
    estimator e{*fn, config()};
    auto before = e.evaluate(input(test, 1));
    ASSERT_TRUE(before) << c.what << ": " << render(before.error());
    auto r = e.train(input(train, 0), 300);
    ASSERT_TRUE(r) << c.what << ": " << render(r.error());
    EXPECT_EQ(r->global_step, 300u);
    auto after = e.evaluate(input(test, 1));
    ASSERT_TRUE(after) << c.what;
    EXPECT_GT(after->at("accuracy"), 0.95) << c.what;
    EXPECT_LT(after->at("loss"), 0.5 * before->at("loss")) << c.what;
    EXPECT_EQ(after->at("global_step"), 300);
    auto p = e.predict(input(test, 1));
    ASSERT_TRUE(p);
    EXPECT_EQ(p->rows(), 150);
    EXPECT_TRUE(p->rowwise().sum().isApprox(Eigen::VectorXf::Ones(150))) << "probabilities";
  }
}

TEST(estimator, a_regressor_fits_a_linear_target) {
  auto t = std::make_shared<example_table>();
  std::mt19937_64 rng{4};
  std::normal_distribution<double> draw;
  std::vector<double> xy;
  t->labels = matrix(300, 1);
  for (int i = 0; i < 300; ++i) {
    double a = draw(rng), b = draw(rng);
    xy.insert(xy.end(), {a, b});
    t->labels(i, 0) = float(2 * a - b + 1);
  }
  t->features["xy"] = ce::feature_value::numeric(xy, 2);
  auto fn = dnn_model({.columns = {*ce::numeric_column<float>("xy", 2)},
                       .hidden_units = {16},
                       .head = {.kind = ce::head_kind::regression}});
  ASSERT_TRUE(fn);
  estimator e{*fn, config()};
  ASSERT_TRUE(e.train(input(t, 0), 400));
  auto m = e.evaluate(input(t, 1));
  ASSERT_TRUE(m);
  EXPECT_LT(m->at("mse"), 0.05);
}

/// Observations of each phase of darcy_estimator_step_seconds so far in this process.
std::map<std::string, double> step_phase_counts() {
  std::map<std::string, double> counts;
  auto values = runtime::process_metrics().values({"darcy_estimator_step_seconds"});
  for (auto& [labels, count] : values["darcy_estimator_step_seconds"])
    for (auto& [name, phase] : labels)
      if (name == "phase")
        counts[phase] = count;
  return counts;
}

TEST(estimator, training_times_every_phase_of_every_step_in_its_result_and_the_process_metrics) {
  auto fn = dnn_model(blob_options());
  ASSERT_TRUE(fn);
  estimator e{*fn, config()};
  auto before = step_phase_counts();
  auto r = e.train(input(blobs(100, 1), 0), 7);
  ASSERT_TRUE(r) << render(r.error());
  ASSERT_EQ(r->steps, 7u);
  auto after = step_phase_counts();
  // Without parameter servers a step has no pull; its update is the local optimizer step.
  for (const char* phase : {"input", "forward", "backward", "update", "hooks"})
    EXPECT_EQ(after[phase] - before[phase], 7) << phase;
  for (const char* phase : {"input", "forward", "backward", "update"})
    EXPECT_GT(r->phase_seconds[phase], 0) << phase;
  EXPECT_EQ(after["pull"], before["pull"]);
  EXPECT_EQ(r->phase_seconds.size(), 8u);
  EXPECT_EQ(r->phase_seconds["pull"], 0);
  EXPECT_EQ(r->phase_seconds["forward.embedding_lookup"], 0) << "no dynamic embedding column";
}

TEST(estimator, a_run_resumed_mid_epoch_ends_with_bit_identical_variables) {
  test::temp_dir dir{"estimator_resume"};
  auto data = blobs(400, 3); // 12.5 batches per epoch
  auto fn = dnn_model(blob_options());
  ASSERT_TRUE(fn);
  estimator whole{*fn, config(dir.path() + "/whole")};
  ASSERT_TRUE(whole.train(input(data, 0), 30));

  auto fn2 = dnn_model(blob_options()); // fresh columns: a new process would build them anew
  estimator first{*fn2, config(dir.path() + "/split")};
  auto r1 = first.train(input(data, 0), 17);
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->global_step, 17u);
  auto fn3 = dnn_model(blob_options());
  estimator second{*fn3, config(dir.path() + "/split")};
  auto r2 = second.train(input(data, 0), 30);
  ASSERT_TRUE(r2) << render(r2.error());
  EXPECT_EQ(r2->resumed_from, 17u);
  EXPECT_EQ(r2->steps, 13u);
  auto a = values_of(whole), b = values_of(second);
  ASSERT_EQ(a.size(), b.size());
  for (auto& [name, value] : a)
    EXPECT_TRUE(value == b.at(name)) << name << " differs";
}

TEST(estimator, a_warm_start_begins_from_another_model_dir_and_trains_its_input_afresh) {
  test::temp_dir dir{"estimator_warm"};
  auto data = blobs(400, 3);
  auto fn = dnn_model(blob_options());
  ASSERT_TRUE(fn);
  estimator last_round{*fn, config(dir.path() + "/round-1")};
  ASSERT_TRUE(last_round.train(input(data, 0), 17)); // stops mid-epoch

  auto fn2 = dnn_model(blob_options());
  auto cfg = config(dir.path() + "/round-2");
  cfg.warm_start_from = dir.path() + "/round-1";
  estimator next_round{*fn2, cfg};
  ASSERT_FALSE(next_round.build(input(data, 0)));
  EXPECT_EQ(next_round.global_step(), 17u);
  auto a = values_of(last_round), b = values_of(next_round);
  for (auto& [name, value] : a)
    EXPECT_TRUE(value == b.at(name)) << name << " does not start from the last round";
  // The new round's input starts at its beginning: one epoch is 13 batches from step 17.
  auto r = next_round.train(input(data, 1), 0);
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_EQ(r->resumed_from, 17u);
  EXPECT_EQ(r->steps, 13u);
  EXPECT_EQ(r->global_step, 30u);
  // Its checkpoints go to its own directory; the last round's stays as it was.
  EXPECT_EQ(stores::checkpoint_dir{dir.path() + "/round-2"}.read_manifest()->step, 30);
  EXPECT_EQ(stores::checkpoint_dir{dir.path() + "/round-1"}.read_manifest()->step, 17);

  auto fn3 = dnn_model(blob_options());
  auto missing = config(dir.path() + "/round-3");
  missing.warm_start_from = dir.path() + "/no-such-round";
  estimator orphan{*fn3, missing};
  auto err = orphan.train(input(data, 1), 0);
  ASSERT_FALSE(err);
  EXPECT_TRUE(is(err.error(), errc::not_found)) << render(err.error());
}

TEST(estimator, a_hook_after_the_restore_sets_the_state_and_step_the_run_goes_on_from) {
  test::temp_dir dir{"estimator_after_restore"};
  auto data = blobs(400, 3);
  auto fn = dnn_model(blob_options());
  ASSERT_TRUE(fn);
  estimator older{*fn, config(dir.path() + "/model")};
  ASSERT_TRUE(older.train(input(data, 0), 5));
  auto fn1 = dnn_model(blob_options());
  estimator newer{*fn1, config(dir.path() + "/newer")};
  ASSERT_TRUE(newer.train(input(data, 0), 9)); // the newer state, kept elsewhere

  struct hook_case {
    std::string name;
    uint64_t answer; // 0: the step it is given
    uint64_t want_step;
  };
  for (auto& c : std::vector<hook_case>{{"loads nothing", 0, 5}, {"loads newer state", 9, 9}}) {
    auto fn2 = dnn_model(blob_options());
    auto cfg = config(dir.path() + "/model");
    uint64_t given = 0;
    cfg.after_restore = [&](estimator& e, uint64_t step) -> caf::expected<uint64_t> {
      given = step;
      if (c.answer == 0)
        return step;
      for (auto* p : e.variables().all())
        for (auto* q : newer.variables().all())
          if (p->name == q->name)
            p->value = q->value;
      return c.answer;
    };
    estimator resumed{*fn2, cfg};
    ASSERT_FALSE(resumed.build(input(data, 0))) << c.name;
    EXPECT_EQ(given, 5u) << c.name << ": the hook sees the checkpoint's step";
    EXPECT_EQ(resumed.global_step(), c.want_step) << c.name;
    auto want = values_of(c.answer == 0 ? older : newer), got = values_of(resumed);
    for (auto& [name, value] : want)
      EXPECT_TRUE(value == got.at(name)) << c.name << ": " << name;
  }

  auto fn3 = dnn_model(blob_options());
  auto failing = config(dir.path() + "/model");
  failing.after_restore = [](estimator&, uint64_t) -> caf::expected<uint64_t> {
    return make_error(errc::corrupt_file, "the newer state is damaged");
  };
  estimator refused{*fn3, failing};
  auto err = refused.build(input(data, 0));
  EXPECT_TRUE(is(err, errc::corrupt_file)) << render(err);
}

TEST(estimator, hooks_stop_save_log_and_summarise) {
  test::temp_dir dir{"estimator_hooks"};
  auto data = blobs(300, 4);
  auto fn = dnn_model(blob_options());
  ASSERT_TRUE(fn);
  auto cfg = config(dir.path() + "/model");
  cfg.keep_checkpoint_max = 2;
  estimator e{*fn, cfg};
  std::ostringstream log;
  auto logging = std::make_shared<logging_hook>(log, 2);
  auto summary_path = dir.path() + "/summary.jsonl";
  auto r = e.train(input(data, 0), 0,
                   {std::make_shared<stop_at_step>(6), std::make_shared<checkpoint_saver>(2),
                    logging, std::make_shared<summary_writer>(summary_path, 3)});
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_EQ(r->global_step, 6u);
  stores::checkpoint_dir root{cfg.model_dir};
  EXPECT_EQ(root.checkpoints().size(), 2u) << "keep_checkpoint_max";
  EXPECT_EQ(root.read_manifest()->step, 6);
  std::istringstream logged{log.str()};
  size_t lines = 0;
  for (std::string line; std::getline(logged, line);)
    lines += line.rfind("step ", 0) == 0;
  EXPECT_EQ(lines, 3u);
  std::ifstream summary{summary_path};
  lines = 0;
  for (std::string line; std::getline(summary, line);)
    lines += line.find("\"loss\"") != std::string::npos;
  EXPECT_EQ(lines, 2u);

  auto timed =
    e.train(input(data, 0), 0, {std::make_shared<stop_after_time>(std::chrono::seconds(0))});
  ASSERT_TRUE(timed);
  EXPECT_EQ(timed->steps, 1u) << "a limit of 0 s stops after the first step";
}

TEST(estimator, a_summary_writer_starts_a_fresh_line_after_one_a_killed_writer_tore) {
  test::temp_dir dir{"estimator_torn_summary"};
  auto data = blobs(300, 4);
  auto fn = dnn_model(blob_options());
  ASSERT_TRUE(fn);
  auto summary_path = dir.path() + "/summary.jsonl";
  std::ofstream{summary_path} << "{\"step\":3,\"loss\":0.5}\n{\"step\":6,\"lo";
  estimator e{*fn, config(dir.path() + "/model")};
  auto r =
    e.train(input(data, 0), 0,
            {std::make_shared<stop_at_step>(6), std::make_shared<summary_writer>(summary_path, 3)});
  ASSERT_TRUE(r) << render(r.error());
  std::ifstream summary{summary_path};
  std::vector<std::string> lines;
  for (std::string line; std::getline(summary, line);)
    lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1], "{\"step\":6,\"lo") << "the torn line is left alone, on its own line";
  for (size_t i : {size_t{2}, size_t{3}}) {
    auto j = nlohmann::json::parse(lines[i], nullptr, false);
    ASSERT_TRUE(j.is_object()) << lines[i];
    EXPECT_EQ(j.value("step", 0u), 3 * (i - 1));
  }
}

TEST(estimator, early_stopping_stops_after_patience_and_restores_the_best_variables) {
  auto train = blobs(300, 7), valid = blobs(90, 8);
  auto fn = dnn_model(blob_options());
  ASSERT_TRUE(fn);
  // A learning rate this high makes the validation loss wander, so the best evaluation is
  // not the last one.
  auto cfg = config();
  cfg.optimizer.learning_rate = 0.5;
  estimator e{*fn, cfg};
  auto stop = std::make_shared<early_stopping>(
    input(valid, 1), early_stopping::options{.metric = "loss", .patience = 2, .every_steps = 5});
  std::map<uint64_t, std::map<std::string, matrix>> snapshots;
  struct recorder final : session_run_hook {
    std::map<uint64_t, std::map<std::string, matrix>>* out;
    caf::expected<hook_action> after_step(estimator& est, const step_result& r) override {
      if (r.global_step % 5 == 0)
        (*out)[r.global_step] = values_of(est);
      return hook_action::go_on;
    }
  };
  auto rec = std::make_shared<recorder>();
  rec->out = &snapshots;
  auto r = e.train(input(train, 0), 500, {rec, stop});
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_LT(r->global_step, 500u) << "patience ran out before max_steps";
  ASSERT_GT(stop->best_step(), 0u);
  EXPECT_EQ(r->global_step, stop->best_step() + 2 * 5) << "two evaluations without a gain";
  EXPECT_EQ(values_of(e), snapshots.at(stop->best_step()));
  auto m = e.evaluate(input(valid, 1));
  ASSERT_TRUE(m);
  EXPECT_NEAR(m->at("loss"), stop->best(), 1e-6);

  auto wrong = std::make_shared<early_stopping>(
    input(valid, 1), early_stopping::options{.metric = "nope", .every_steps = 1});
  estimator f{*fn, config()};
  EXPECT_TRUE(is(f.train(input(train, 0), 5, {wrong}).error(), errc::invalid_config));
}

TEST(estimator, the_schedule_sets_each_steps_rate_and_before_step_hooks_see_each_step) {
  auto data = blobs(100, 12);
  auto fn = dnn_model(blob_options());
  ASSERT_TRUE(fn);
  auto sgd = [](float rate) {
    return optimizer_config{.kind = optimizer_kind::sgd, .learning_rate = rate};
  };
  // The first step of a two-step warmup at 0.1 is a step at 0.05.
  auto warm = config();
  warm.optimizer = sgd(0.1f);
  warm.schedule = {.warmup_steps = 2};
  auto half = config();
  half.optimizer = sgd(0.05f);
  auto other_fn = dnn_model(blob_options()); // a model function keeps state between calls
  estimator a{*fn, warm}, b{*other_fn, half};
  struct recorder final : session_run_hook {
    std::vector<uint64_t> steps;
    caf::error before_step(estimator&, uint64_t global_step) override {
      steps.push_back(global_step);
      return {};
    }
  };
  auto rec = std::make_shared<recorder>();
  ASSERT_TRUE(a.train(input(data, 1), 1, {rec}));
  ASSERT_TRUE(b.train(input(data, 1), 1));
  EXPECT_EQ(values_of(a), values_of(b));
  ASSERT_TRUE(a.train(input(data, 1), 3, {rec}));
  EXPECT_EQ(rec->steps, (std::vector<uint64_t>{0, 1, 2}));

  auto bad = config();
  bad.schedule = {.warmup_steps = 10, .decay_start = 5, .decay_steps = 5};
  estimator c{*fn, bad};
  EXPECT_TRUE(is(c.train(input(data, 1), 1).error(), errc::invalid_config));
}

TEST(estimator, the_nan_guard_fails_training_and_keeps_the_last_good_checkpoint) {
  test::temp_dir dir{"estimator_nan"};
  auto inner = dnn_model(blob_options());
  ASSERT_TRUE(inner);
  auto calls = std::make_shared<int>(0);
  model_fn diverging = [inner = *inner, calls](model_context& ctx, const batch& b,
                                               const params& p) -> caf::expected<estimator_spec> {
    auto spec = inner(ctx, b, p);
    if (spec && ctx.training() && ++*calls > 9) // the first call builds, the next are steps
      spec->loss = std::numeric_limits<float>::quiet_NaN();
    return spec;
  };
  auto cfg = config(dir.path());
  cfg.save_checkpoints_steps = 3;
  estimator e{diverging, cfg};
  auto r = e.train(input(blobs(200, 5), 0), 50, {std::make_shared<nan_guard>()});
  ASSERT_FALSE(r);
  EXPECT_TRUE(is(r.error(), errc::invalid_argument));
  EXPECT_NE(render(r.error()).find("NaN at step 9"), std::string::npos) << render(r.error());
  EXPECT_EQ(stores::checkpoint_dir{dir.path()}.read_manifest()->step, 6);
}

TEST(estimator, an_exported_model_reloads_and_predicts_exactly_as_the_estimator) {
  test::temp_dir dir{"estimator_export"};
  auto train = blobs(300, 9), test = blobs(60, 10);
  struct {
    const char* what;
    caf::expected<model_fn> (*make)(canned_options);
  } cases[] = {
    {"dnn", dnn_model}, {"wide & deep", dnn_linear_combined_model}, {"linear", linear_model}};
  for (auto& c : cases) {
    auto fn = c.make(blob_options());
    ASSERT_TRUE(fn);
    estimator e{*fn, config()};
    ASSERT_TRUE(e.train(input(train, 0), 40));
    auto root = dir.path() + "/" + c.what;
    auto v1 = export_model(e, root, input(test, 1));
    ASSERT_TRUE(v1) << c.what << ": " << render(v1.error());
    EXPECT_EQ(*v1, "1");
    ASSERT_TRUE(e.train(input(train, 0), 80));
    auto v2 = export_model(e, root, input(test, 1));
    ASSERT_TRUE(v2);
    EXPECT_EQ(*v2, "2");
    auto expected =
      e.predict([test] { return make_dataset(test, {.batch_size = 60, .shuffle = false}); });
    ASSERT_TRUE(expected);
    auto newest = exported_model::load(root);
    ASSERT_TRUE(newest) << c.what << ": " << render(newest.error());
    EXPECT_EQ((*newest)->version(), "2");
    auto unlabeled = std::make_shared<example_table>(*test);
    unlabeled->labels = matrix{};
    std::vector<size_t> all(60);
    std::iota(all.begin(), all.end(), size_t{0});
    auto got = (*newest)->predict(gather(*unlabeled, all));
    ASSERT_TRUE(got) << render(got.error());
    EXPECT_TRUE(*got == *expected) << c.what << ": the reloaded model predicts differently";
    auto older = exported_model::load(root, "1");
    ASSERT_TRUE(older);
    EXPECT_FALSE(*(*older)->predict(gather(*test, {0, 1, 2})) == expected->topRows(3))
      << "version 1 is the model of step 40";
    std::ofstream{root + "/2/weights.params", std::ios::app} << "x";
    EXPECT_TRUE(is(exported_model::load(root).error(), errc::corrupt_file)) << c.what;
  }
  EXPECT_TRUE(is(exported_model::load(dir.path() + "/none").error(), errc::not_found));
}

TEST(estimator, bad_models_checkpoints_and_inputs_are_refused_with_clear_errors) {
  test::temp_dir dir{"estimator_errors"};
  auto data = blobs(100, 6);
  auto fn = dnn_model(blob_options({16}));
  estimator e{*fn, config(dir.path())};
  ASSERT_TRUE(e.train(input(data, 0), 3));
  auto narrower = dnn_model(blob_options({8}));
  estimator other{*narrower, config(dir.path())};
  auto r = other.train(input(data, 0), 6);
  ASSERT_FALSE(r);
  EXPECT_TRUE(is(r.error(), errc::dimension_mismatch)) << render(r.error());

  auto unlabeled = std::make_shared<example_table>(*data);
  unlabeled->labels = matrix{};
  EXPECT_TRUE(is(e.evaluate(input(unlabeled, 1)).error(), errc::invalid_argument));
  EXPECT_TRUE(e.predict(input(unlabeled, 1))) << "predict needs no labels";
  auto no_tag = std::make_shared<example_table>(*data);
  no_tag->features.erase("tag");
  EXPECT_TRUE(is(e.train(input(no_tag, 1), 10).error(), errc::invalid_argument));

  struct {
    const char* what;
    canned_options o;
  } configs[] = {
    {"no hidden layer", blob_options({})},
    {"a layer of 0 units", blob_options({0})},
    {"one class",
     [] {
       auto o = blob_options();
       o.head.classes = 1;
       return o;
     }()},
  };
  for (auto& c : configs)
    EXPECT_TRUE(is(dnn_model(c.o).error(), errc::invalid_config)) << c.what;
  for (double rate : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                      std::numeric_limits<double>::quiet_NaN()}) {
    auto cfg = config(dir.path() + "/rate");
    cfg.optimizer.learning_rate = rate;
    estimator bad_rate{*fn, cfg};
    auto trained = bad_rate.train(input(data, 0), 3);
    ASSERT_FALSE(trained) << "learning rate " << rate;
    EXPECT_TRUE(is(trained.error(), errc::invalid_config)) << render(trained.error());
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/rate")) << "a checkpoint was written";
  }
  EXPECT_FALSE(e.save_checkpoint());
  estimator no_dir{*fn, config()};
  EXPECT_TRUE(is(no_dir.save_checkpoint(), errc::invalid_config));
}

} // namespace
} // namespace darcy::ops::estimator
