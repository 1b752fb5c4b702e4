// The canned DLRM classifier: the whole model's gradients (every MLP variable and embedding
// table) against central finite differences of its loss, an export that predicts as the
// estimator does, and the options it refuses.
#include "ops/estimator/canned.hpp"

#include <filesystem>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/estimator/export/export.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops::estimator {
namespace {

namespace ce = compute::estimator;

/// Rows of three counts and two categorical fields; a click when the first field is "a" or
/// the first count is large.
std::shared_ptr<example_table> clicks(size_t rows, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::uniform_int_distribution<int> count{0, 50}, letter{0, 4};
  std::vector<double> ints;
  std::vector<std::vector<std::string>> c0, c1;
  std::vector<float> labels;
  for (size_t r = 0; r < rows; ++r) {
    double first = count(rng);
    ints.insert(ints.end(), {first, double(count(rng)), -1.0});
    auto a = std::string(1, char('a' + letter(rng)));
    c0.push_back({a});
    c1.push_back(r % 7 == 0 ? std::vector<std::string>{} : std::vector{std::to_string(r % 3)});
    labels.push_back(a == "a" || first > 40 ? 1.0f : 0.0f);
  }
  auto t = std::make_shared<example_table>();
  t->features["ints"] = ce::feature_value::numeric(std::move(ints), 3);
  t->features["c0"] = ce::feature_value::categorical(std::move(c0));
  t->features["c1"] = ce::feature_value::categorical(std::move(c1));
  t->labels = Eigen::Map<matrix>(labels.data(), static_cast<Eigen::Index>(labels.size()), 1);
  return t;
}

/// Embeddings of width `dim`; MLPs of 2 · dim (bottom, then dim) and 3 · dim units.
dlrm_options small_dlrm(uint32_t dim = 2) {
  dlrm_options o;
  o.dense_columns = {*ce::numeric_column<float>("ints", 3, 0, 1, ce::numeric_transform::log1p)};
  for (auto* key : {"c0", "c1"})
    o.embedding_columns.push_back(
      *ce::embedding_column<float>(*ce::categorical_column_with_hash_bucket(key, 20), dim));
  o.bottom_units = {2 * dim, dim};
  o.top_units = {3 * dim};
  return o;
}

batch all_of(const example_table& t) {
  std::vector<size_t> rows(t.rows());
  std::iota(rows.begin(), rows.end(), size_t{0});
  return gather(t, rows);
}

TEST(canned_dlrm, whole_model_gradients_match_finite_differences) {
  for (bool normalize : {false, true}) {
    auto o = small_dlrm();
    o.batch_norm = normalize;
    auto fn = dlrm_classifier(std::move(o));
    ASSERT_TRUE(fn) << render(fn.error());
    auto b = all_of(*clicks(6, 3));
    variable_store vars;
    auto loss = [&](bool backward) {
      model_context ctx{vars, mode::train, 7, 1};
      auto spec = (*fn)(ctx, b, {});
      EXPECT_TRUE(spec) << render(spec.error());
      if (backward)
        spec->train_op();
      return double(spec->loss);
    };
    // The first call makes the variables. Zero biases put some pre-activations exactly at
    // ReLU's kink (a row whose inputs are all 0), where no derivative exists: move every
    // variable off its start, then take the gradients.
    loss(false);
    std::mt19937_64 rng{17};
    std::uniform_real_distribution<float> jitter{-0.2f, 0.2f};
    for (auto* p : vars.all()) {
      if (!compute::nn::is_moving_statistic(p->name))
        for (Eigen::Index i = 0; i < p->value.size(); ++i)
          p->value.data()[i] += jitter(rng);
      p->zero_grad();
    }
    loss(true);
    std::vector<std::pair<std::string, matrix>> analytic;
    for (auto* p : vars.all())
      analytic.emplace_back(p->name, p->grad);
    ASSERT_GE(analytic.size(), 9u) << "two tables and the variables of four dense layers";
    size_t checked = 0;
    for (size_t v = 0; v < vars.all().size(); ++v) {
      auto* p = vars.all()[v];
      if (compute::nn::is_moving_statistic(p->name))
        continue;
      for (Eigen::Index i = 0; i < p->value.size(); ++i) {
        constexpr float step = 2e-3f;
        auto saved = p->value.data()[i];
        p->value.data()[i] = saved + step;
        auto up = loss(false);
        p->value.data()[i] = saved - step;
        auto down = loss(false);
        p->value.data()[i] = saved;
        auto numeric = (up - down) / (2 * step);
        EXPECT_NEAR(analytic[v].second.data()[i], numeric, 3e-3 + 3e-2 * std::abs(numeric))
          << p->name << " entry " << i << (normalize ? " with batch_norm" : "");
        ++checked;
      }
    }
    EXPECT_GT(checked, 60u);
  }
}

TEST(canned_dlrm, an_export_predicts_as_the_estimator_and_the_model_learns) {
  test::temp_dir dir{"canned_dlrm"};
  auto train = clicks(400, 1), test = clicks(100, 2);
  auto o = small_dlrm(8);
  o.batch_norm = true;
  auto fn = dlrm_classifier(std::move(o));
  ASSERT_TRUE(fn);
  estimator e{*fn, {.seed = 3, .threads = 1, .optimizer = compute::adam_optimizer(0.003f)}};
  auto input = [](std::shared_ptr<example_table> t, uint32_t epochs) -> input_fn {
    return [t, epochs] { return make_dataset(t, {.batch_size = 50, .epochs = epochs}); };
  };
  auto eval = [&] { return make_dataset(test, {.batch_size = 100, .shuffle = false}); };
  ASSERT_TRUE(e.train(input(train, 0), 1000));
  auto metrics = e.evaluate(eval);
  ASSERT_TRUE(metrics) << render(metrics.error());
  EXPECT_GT(metrics->at("auc_roc"), 0.97) << "the rule is simple";
  auto version = export_model(e, dir.path(), input(test, 1));
  ASSERT_TRUE(version) << render(version.error());
  auto expected = e.predict(eval);
  ASSERT_TRUE(expected);
  auto loaded = exported_model::load(dir.path());
  ASSERT_TRUE(loaded) << render(loaded.error());
  auto unlabeled = all_of(*test);
  unlabeled.labels = matrix{};
  auto got = (*loaded)->predict(unlabeled);
  ASSERT_TRUE(got) << render(got.error());
  EXPECT_TRUE(got->isApprox(*expected, 1e-6f));
}

TEST(canned_models, one_whose_columns_own_tables_serves_one_estimator_and_refuses_another) {
  auto train = clicks(100, 1);
  auto input = [train] { return make_dataset(train, {.batch_size = 50, .epochs = 1}); };
  struct case_t {
    const char* name;
    caf::expected<model_fn> fn;
    bool shareable;
  } cases[] = {
    {"dlrm over embedding columns", dlrm_classifier(small_dlrm()), false},
    {"dnn over an embedding column",
     dnn_model({.columns = {*ce::embedding_column<float>(
                  *ce::categorical_column_with_hash_bucket("c0", 20), 2)},
                .hidden_units = {4},
                .head = {.kind = ce::head_kind::binary}}),
     false},
    {"dnn over numbers only",
     dnn_model({.columns = {*ce::numeric_column<float>("ints", 3)},
                .hidden_units = {4},
                .head = {.kind = ce::head_kind::binary}}),
     true},
  };
  for (auto& c : cases) {
    ASSERT_TRUE(c.fn) << c.name;
    estimator first{*c.fn, {.threads = 1}};
    ASSERT_TRUE(first.train(input, 2)) << c.name;
    estimator second{*c.fn, {.threads = 1}};
    auto r = second.train(input, 2);
    EXPECT_EQ(bool(r), c.shareable) << c.name;
    if (!r) {
      EXPECT_TRUE(is(r.error(), errc::invalid_config)) << c.name;
      EXPECT_NE(render(r.error()).find("build a model function (and its columns) per estimator"),
                std::string::npos)
        << render(r.error());
    }
    EXPECT_TRUE(first.train(input, 4)) << c.name << ": the first estimator goes on";
  }
}

TEST(canned_dlrm, bad_options_are_refused_by_name) {
  struct case_t {
    const char* name;
    std::function<void(dlrm_options&)> change;
    const char* says;
  } cases[] = {
    {"no embeddings", [](dlrm_options& o) { o.embedding_columns.clear(); }, "embedding columns"},
    {"no dense input", [](dlrm_options& o) { o.dense_columns.clear(); }, "dense columns"},
    {"no bottom MLP", [](dlrm_options& o) { o.bottom_units.clear(); }, "bottom MLP"},
    {"a layer of 0 units", [](dlrm_options& o) { o.top_units = {0}; }, "0 units"},
    {"embeddings wider than the bottom output",
     [](dlrm_options& o) {
       o.bottom_units = {4, 3};
     },
     "c0_embedding is 2 wide, not a multiple of the bottom MLP's output 3"},
    {"dropout of 1", [](dlrm_options& o) { o.dropout = 1; }, "dropout"},
  };
  for (auto& c : cases) {
    auto o = small_dlrm();
    c.change(o);
    auto fn = dlrm_classifier(std::move(o));
    ASSERT_FALSE(fn) << c.name;
    EXPECT_TRUE(is(fn.error(), errc::invalid_config)) << c.name;
    EXPECT_NE(render(fn.error()).find(c.says), std::string::npos) << render(fn.error());
  }
}

} // namespace
} // namespace darcy::ops::estimator
