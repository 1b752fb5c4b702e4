// The MoE language model's data and model: the corpus splits by document with an output
// vocabulary of the training words, and a short training run on a small corpus lowers its
// full-softmax perplexity for every middle layer; bad settings are refused.
#include <algorithm>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "apps/moe/lm_corpus.hpp"
#include "apps/moe/lm_model.hpp"
#include "gpu/device.hpp"
#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tiny_brown.hpp"

namespace darcy::moe {
namespace {

TEST(lm_corpus, documents_split_90_5_5_and_rare_words_are_labelled_unknown) {
  test::temp_dir dir{"lm_corpus"};
  test::write_tiny_brown(dir.path());
  auto c = load_brown_lm(dir.path(), 2);
  ASSERT_TRUE(c) << render(c.error());
  EXPECT_EQ(c->documents[0], 36u);
  EXPECT_EQ(c->documents[1], 2u);
  EXPECT_EQ(c->documents[2], 2u);
  EXPECT_EQ(c->vocabulary[0], end_of_sentence);
  EXPECT_EQ(c->vocabulary[1], unknown_word);
  EXPECT_EQ(std::count(c->vocabulary.begin(), c->vocabulary.end(), "rare"), 0);
  auto rare = std::find(c->train.words.begin(), c->train.words.end(), "rare");
  ASSERT_NE(rare, c->train.words.end()) << "inputs keep the raw word";
  EXPECT_EQ(c->train.ids[rare - c->train.words.begin()], 1u);
  EXPECT_EQ(std::count(c->train.words.begin(), c->train.words.end(), end_of_sentence), 72);
  auto missing = load_brown_lm(dir.path() + "/nothing", 2);
  ASSERT_FALSE(missing);
  EXPECT_TRUE(is(missing.error(), errc::not_found));
}

TEST(lm_corpus, a_minimum_count_that_no_word_reaches_is_refused) {
  test::temp_dir dir{"lm_corpus_min_count"};
  test::write_tiny_brown(dir.path());
  auto c = load_brown_lm(dir.path(), 1u << 30);
  ASSERT_FALSE(c) << c->vocabulary.size() << " words";
  EXPECT_TRUE(is(c.error(), errc::invalid_config)) << render(c.error());
  EXPECT_NE(render(c.error()).find("lower the minimum count"), std::string::npos);
}

TEST(lm_model, a_short_run_lowers_the_full_softmax_perplexity_of_every_middle_layer) {
  test::temp_dir dir{"lm_model"};
  test::write_tiny_brown(dir.path());
  auto corpus = load_brown_lm(dir.path(), 2);
  ASSERT_TRUE(corpus) << render(corpus.error());
  auto base = test::tiny_lm_options(0.02);
  base.primary = {.experts = 2, .k = 1, .importance_weight = 0.1, .seed = 3};
  for (auto middle : {lm_middle::lstm, lm_middle::moe, lm_middle::hierarchical}) {
    auto o = base;
    o.middle = middle;
    if (middle == lm_middle::hierarchical)
      o.layer.gating.mask = mask_kind::top_k;
    o.name = "lm" + std::to_string(static_cast<int>(middle));
    auto s = ops::session::open({});
    ASSERT_TRUE(s) << render(s.error());
    auto m = lm_model::make(**s, o, *corpus);
    ASSERT_TRUE(m) << render(m.error());
    auto before = (*m)->evaluate(corpus->valid);
    ASSERT_TRUE(before) << render(before.error());
    auto per_stream = (corpus->train.words.size() - 1) / o.batch;
    uint64_t step = 0;
    for (int epoch = 0; epoch < 6; ++epoch) {
      (*m)->reset_state();
      for (size_t at = 0; at + o.unroll <= per_stream; at += o.unroll, ++step) {
        std::vector<std::string> keys;
        std::vector<uint64_t> labels;
        for (size_t t = 0; t < o.unroll; ++t)
          for (size_t b = 0; b < o.batch; ++b) {
            keys.push_back(corpus->train.words[b * per_stream + at + t]);
            labels.push_back(corpus->train.ids[b * per_stream + at + t + 1]);
          }
        auto loss = (*m)->train_step(keys, labels, step);
        ASSERT_TRUE(loss) << render(loss.error());
      }
    }
    auto after = (*m)->evaluate(corpus->valid);
    ASSERT_TRUE(after) << render(after.error());
    EXPECT_LT(after->perplexity, 0.5 * before->perplexity) << o.name;
    EXPECT_EQ(after->expert_load.empty(), middle == lm_middle::lstm) << o.name;
    EXPECT_EQ(after->threshold_agreement.has_value(), middle == lm_middle::moe) << o.name;
  }
}

TEST(lm_model, bad_settings_are_refused_with_a_clear_error) {
  test::temp_dir dir{"lm_model_bad"};
  test::write_tiny_brown(dir.path());
  auto corpus = load_brown_lm(dir.path(), 2);
  ASSERT_TRUE(corpus);
  auto s = ops::session::open({});
  ASSERT_TRUE(s);
  struct bad_case {
    const char* name;
    void (*change)(lm_options&);
    errc want = errc::invalid_config;
  };
  std::vector<bad_case> cases = {
    {"zero width", [](lm_options& o) { o.dim = 0; }},
    {"k > n", [](lm_options& o) { o.layer.gating.k = 9; }},
    {"zero experts", [](lm_options& o) { o.layer.gating.experts = 0; }},
    {"no negatives", [](lm_options& o) { o.sampled = 0; }},
    {"dropout of 1", [](lm_options& o) { o.dropout = 1; }},
    {"negative dropout", [](lm_options& o) { o.dropout = -0.1; }},
    {"infinite learning rate",
     [](lm_options& o) { o.learning_rate = std::numeric_limits<double>::infinity(); }},
    {"NaN embedding learning rate",
     [](lm_options& o) { o.embedding_learning_rate = std::numeric_limits<double>::quiet_NaN(); }},
    {"a hierarchical MoE of no groups",
     [](lm_options& o) {
       o.middle = lm_middle::hierarchical;
       o.primary.experts = 0;
     }},
    {"the dense baseline on a GPU",
     [](lm_options& o) {
       o.middle = lm_middle::lstm;
       o.gpu = true;
     }},
  };
  if (gpu::device_count() == 0) // fails at once, before any training
    cases.push_back({"a MoE on a GPU where there is none", [](lm_options& o) { o.gpu = true; },
                     errc::unavailable});
  for (auto& c : cases) {
    lm_options o;
    o.dim = 8;
    c.change(o);
    auto m = lm_model::make(**s, o, *corpus);
    ASSERT_FALSE(m) << c.name;
    EXPECT_TRUE(is(m.error(), c.want)) << c.name << ": " << render(m.error());
  }
}

} // namespace
} // namespace darcy::moe
