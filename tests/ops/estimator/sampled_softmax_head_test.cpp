// sampled_softmax_head: labels as raw strings in a service table, trained by sampled softmax
// through the Estimator, evaluated by recall@k over the whole table without growing it.
#include "ops/estimator/sampled_softmax_head.hpp"

#include <numeric>

#include <gtest/gtest.h>

#include "compute/nn/softmax_cross_entropy.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/estimator/dynamic_embedding_column.hpp"
#include "ops/estimator/estimator.hpp"
#include "ops/estimator/export/export.hpp"
#include "ops/estimator/layers.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops::estimator {
namespace {

namespace ce = compute::estimator;

constexpr uint32_t dim = 8;

de_config table(const char* name) {
  de_config c{.name = name, .dim = dim};
  c.optimizer = {optimizer_kind::adam, 0.05f};
  return c;
}

/// 24 examples: word "w<i>" carries label "l<i>", and every third example also "l<i+1>".
std::shared_ptr<example_table> pairs() {
  std::vector<std::vector<std::string>> words, labels;
  for (int i = 0; i < 24; ++i) {
    words.push_back({"w" + std::to_string(i)});
    labels.push_back({"l" + std::to_string(i)});
    if (i % 3 == 0)
      labels.back().push_back("l" + std::to_string(i + 1));
  }
  auto t = std::make_shared<example_table>();
  t->features["words"] = ce::feature_value::categorical(words);
  t->features["labels"] = ce::feature_value::categorical(labels);
  return t;
}

class sampled_softmax_head_test : public testing::Test {
protected:
  void SetUp() override {
    auto opened = session::open({});
    ASSERT_TRUE(opened) << render(opened.error());
    s = std::move(*opened);
    auto made =
      sampled_softmax_head::make(*s, {.labels = table("labels"), .num_sampled = 8, .k = 3});
    ASSERT_TRUE(made) << render(made.error());
    head = *made;
    auto column = dynamic_embedding_column(*s, "words", table("words"));
    ASSERT_TRUE(column) << render(column.error());
    input = std::make_shared<ce::input_layer<float>>(std::vector<ce::dense_ptr<float>>{*column});
  }

  model_fn model(uint32_t out_width = dim) {
    return [this, out_width](model_context& ctx, const batch& b, const params&) {
      auto x = input_layer(ctx, b.features, *input);
      if (!x)
        return caf::expected<estimator_spec>{std::move(x.error())};
      return head->spec(ctx, dense(ctx, *x, out_width, "out"), b);
    };
  }

  input_fn data(uint32_t epochs, std::shared_ptr<example_table> t = pairs()) {
    return [t, epochs] { return make_dataset(t, {.batch_size = 8, .epochs = epochs, .seed = 3}); };
  }

  uint64_t label_rows() {
    auto st = stats(*s, "labels");
    EXPECT_TRUE(st) << render(st.error());
    return st ? st->rows : 0;
  }

  std::unique_ptr<session> s;
  std::shared_ptr<sampled_softmax_head> head;
  std::shared_ptr<ce::input_layer<float>> input;
};

TEST_F(sampled_softmax_head_test,
       training_learns_the_labels_and_recall_is_measured_on_the_whole_table) {
  estimator e{model(),
              {.seed = 5, .optimizer = compute::adam_optimizer(0.05f), .embeddings = s.get()}};
  auto before = e.evaluate(data(1));
  ASSERT_TRUE(before) << render(before.error());
  EXPECT_EQ(before->at("recall_at_3"), 0.0) << "an empty label table ranks nothing";
  EXPECT_EQ(label_rows(), 0u) << "evaluation creates no label row";
  auto trained = e.train(data(150), 0);
  ASSERT_TRUE(trained) << render(trained.error());
  EXPECT_LT(trained->last_loss, 1.0f);
  auto rows = label_rows();
  EXPECT_EQ(rows, 24u) << "l0..l23, each created when first seen as a label";
  auto m = e.evaluate(data(1));
  ASSERT_TRUE(m) << render(m.error());
  EXPECT_GT(m->at("recall_at_3"), 0.9);
  EXPECT_GT(m->at("recall_at_1"), 0.6);
  EXPECT_LE(m->at("recall_at_1"), m->at("recall_at_3"));

  // Unseen labels in evaluation cost recall, never rows.
  auto unseen = pairs();
  for (auto& row : unseen->features["labels"].strings)
    row = {"never-seen"};
  auto blind = e.evaluate(data(1, unseen));
  ASSERT_TRUE(blind) << render(blind.error());
  EXPECT_EQ(blind->at("recall_at_3"), 0.0);
  EXPECT_EQ(label_rows(), rows);
}

TEST_F(sampled_softmax_head_test, predictions_are_the_top_k_labels_with_their_scores_best_first) {
  estimator e{model(),
              {.seed = 5, .optimizer = compute::adam_optimizer(0.05f), .embeddings = s.get()}};
  ASSERT_TRUE(e.train(data(150), 0));
  auto t = pairs();
  auto b = gather(*t, {0, 1, 2});
  b.features.erase("labels"); // prediction needs no labels
  variable_store& vars = e.variables();
  model_context ctx{vars, mode::predict, 5, 1};
  auto x = input_layer(ctx, b.features, *input);
  ASSERT_TRUE(x);
  auto spec = head->spec(ctx, dense(ctx, *x, dim, "out"), b);
  ASSERT_TRUE(spec) << render(spec.error());
  ASSERT_EQ(spec->predicted_labels.size(), 3u);
  ASSERT_EQ(spec->predictions.rows(), 3);
  ASSERT_EQ(spec->predictions.cols(), 3);
  for (size_t r = 0; r < 3; ++r) {
    ASSERT_EQ(spec->predicted_labels[r].size(), 3u);
    auto ri = static_cast<Eigen::Index>(r);
    EXPECT_GE(spec->predictions(ri, 0), spec->predictions(ri, 1));
    EXPECT_GE(spec->predictions(ri, 1), spec->predictions(ri, 2));
  }
  EXPECT_EQ(spec->predicted_labels[1][0], "l1");
  EXPECT_EQ(label_rows(), 24u) << "prediction creates no row";
}

TEST_F(sampled_softmax_head_test, a_label_table_with_an_ann_index_predicts_from_it) {
  auto labels = table("labels");
  labels.ann.enabled = true;
  auto made = sampled_softmax_head::make(*s, {.labels = labels, .num_sampled = 8, .k = 3});
  ASSERT_TRUE(made) << render(made.error());
  auto indexed = *made;
  model_fn fn = [this, indexed](model_context& ctx, const batch& b, const params&) {
    auto x = input_layer(ctx, b.features, *input);
    if (!x)
      return caf::expected<estimator_spec>{std::move(x.error())};
    return indexed->spec(ctx, dense(ctx, *x, dim, "out"), b);
  };
  estimator e{fn, {.seed = 5, .optimizer = compute::adam_optimizer(0.05f), .embeddings = s.get()}};
  ASSERT_TRUE(e.train(data(150), 0));
  // Every change indexed before the predictions read the index.
  auto caught_up = approximate_top_k(*s, matrix::Ones(1, dim), 1, labels, "labels",
                                     top_k_score::inner_product, {.max_staleness_ms = 0});
  ASSERT_TRUE(caught_up) << render(caught_up.error());
  auto b = gather(*pairs(), {0, 1, 2});
  b.features.erase("labels");
  model_context ctx{e.variables(), mode::predict, 5, 1};
  auto x = input_layer(ctx, b.features, *input);
  ASSERT_TRUE(x);
  auto z = dense(ctx, *x, dim, "out");
  auto spec = indexed->spec(ctx, z, b);
  ASSERT_TRUE(spec) << render(spec.error());
  auto exact = top_k(*s, ctx.value(z), 3, labels, "labels");
  ASSERT_TRUE(exact) << render(exact.error());
  for (size_t r = 0; r < 3; ++r)
    EXPECT_EQ(spec->predicted_labels[r],
              std::vector<std::string>(exact->keys.begin() + exact->offsets[r],
                                       exact->keys.begin() + exact->offsets[r + 1]));
  EXPECT_EQ(spec->predicted_labels[1][0], "l1");
  auto st = stats(*s, "labels");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->ann_rows, 24u);
}

TEST_F(sampled_softmax_head_test, an_export_predicts_the_same_labels_without_the_training_code) {
  test::temp_dir dir{"sampled_head_export"};
  model_fn with_bias = [this](model_context& ctx, const batch& b, const params&) {
    auto x = input_layer(ctx, b.features, *input);
    if (!x)
      return caf::expected<estimator_spec>{std::move(x.error())};
    return head->spec(ctx, append_ones(ctx, dense(ctx, *x, dim - 1, "out")), b);
  };
  estimator e{with_bias,
              {.seed = 5, .optimizer = compute::adam_optimizer(0.05f), .embeddings = s.get()}};
  ASSERT_TRUE(e.train(data(150), 0));
  auto version = export_model(e, dir.path(), data(1));
  ASSERT_TRUE(version) << render(version.error());
  auto t = pairs();
  std::vector<size_t> all(24);
  std::iota(all.begin(), all.end(), size_t{0});
  auto b = gather(*t, all);
  b.features.erase("labels");
  auto expected_scores =
    e.predict([t] { return make_dataset(t, {.batch_size = 24, .shuffle = false}); });
  ASSERT_TRUE(expected_scores) << render(expected_scores.error());
  variable_store& vars = e.variables();
  model_context ctx{vars, mode::predict, 5, 1};
  auto expected = with_bias(ctx, b, {});
  ASSERT_TRUE(expected) << render(expected.error());

  s.reset(); // the export needs neither the session nor the model function
  auto loaded = exported_model::load(dir.path());
  ASSERT_TRUE(loaded) << render(loaded.error());
  auto scores = (*loaded)->predict(b);
  ASSERT_TRUE(scores) << render(scores.error());
  EXPECT_TRUE(*scores == *expected_scores);
  auto labels = (*loaded)->predict_labels(b);
  ASSERT_TRUE(labels) << render(labels.error());
  EXPECT_EQ(*labels, expected->predicted_labels);
  EXPECT_EQ((*labels)[5][0], "l5");
}

TEST_F(sampled_softmax_head_test, a_small_label_table_trains_on_the_full_softmax_of_every_label) {
  auto full = sampled_softmax_head::make(
    *s, {.labels = table("all_labels"), .num_sampled = 2, .full_logits_below = 100, .k = 3});
  ASSERT_TRUE(full) << render(full.error());
  std::vector<std::string> labels;
  for (int i = 0; i < 24; ++i)
    labels.push_back("l" + std::to_string(i));
  ASSERT_TRUE(dynamic_embedding_lookup(*s, labels, table("all_labels"), "all_labels", false));
  auto b = gather(*pairs(), {0, 1, 2});
  variable_store vars;
  model_context ctx{vars, mode::train, 5, 1};
  auto x = input_layer(ctx, b.features, *input);
  ASSERT_TRUE(x) << render(x.error());
  auto out = dense(ctx, *x, dim, "out");
  auto spec = (*full)->spec(ctx, out, b);
  ASSERT_TRUE(spec) << render(spec.error());
  // The dense reference: every label's row, softmax over all 24 (2 negatives would be sampled).
  auto w = dynamic_embedding_lookup(*s, labels, table("all_labels"), "all_labels", false);
  ASSERT_TRUE(w) << render(w.error());
  matrix logits = ctx.value(out) * w->rows.transpose();
  matrix targets = matrix::Zero(3, 24);
  targets(0, 0) = targets(0, 1) = 0.5f; // example 0 carries l0 and l1
  targets(1, 1) = 1;
  targets(2, 2) = 1;
  matrix dlogits;
  auto want = compute::nn::soft_target_cross_entropy<float>(logits, targets, dlogits);
  EXPECT_NEAR(spec->loss, want, 1e-5f);
}

TEST_F(sampled_softmax_head_test, bad_configs_and_batches_are_refused_with_clear_errors) {
  struct {
    const char* what;
    sampled_softmax_head_config config;
  } bad_configs[] = {
    {"no label key", {.label_key = "", .labels = table("x")}},
    {"a table of dimension 0", {.labels = de_config{.name = "x", .dim = 0}}},
    {"no negatives", {.labels = table("x"), .num_sampled = 0}},
    {"k of 0", {.labels = table("x"), .k = 0}},
  };
  for (auto& c : bad_configs) {
    auto h = sampled_softmax_head::make(*s, c.config);
    ASSERT_FALSE(h) << c.what;
    EXPECT_TRUE(is(h.error(), errc::invalid_config)) << c.what << ": " << render(h.error());
  }

  auto no_labels = pairs();
  no_labels->features.erase("labels");
  auto empty_label = pairs();
  empty_label->features["labels"].strings[2].clear();
  struct {
    const char* what;
    model_fn fn;
    std::shared_ptr<example_table> table;
    errc expected;
  } bad_batches[] = {
    {"an output narrower than the label table", model(dim - 1), pairs(), errc::dimension_mismatch},
    {"no label feature", model(), no_labels, errc::invalid_argument},
    {"an example without labels", model(), empty_label, errc::invalid_argument},
  };
  for (auto& c : bad_batches) {
    estimator e{c.fn, {.embeddings = s.get()}};
    auto r = e.train(data(1, c.table), 0);
    ASSERT_FALSE(r) << c.what;
    EXPECT_TRUE(is(r.error(), c.expected)) << c.what << ": " << render(r.error());
  }
}

} // namespace
} // namespace darcy::ops::estimator
