#include "apps/word2vec/trainer.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::word2vec {
namespace {

// A small corpus with structure: words of one topic co-occur.
corpus small_corpus() {
  std::mt19937_64 rng{5};
  std::vector<std::vector<std::string>> topics{{"cat", "dog", "pet", "fur", "paw"},
                                               {"car", "road", "wheel", "fuel", "drive"},
                                               {"sun", "moon", "star", "sky", "night"}};
  std::string text;
  for (int s = 0; s < 600; ++s) {
    auto& topic = topics[rng() % topics.size()];
    for (int w = 0; w < 12; ++w)
      text += topic[rng() % topic.size()] + (w % 4 == 0 ? " the " : " ");
    text += "\n";
  }
  auto c = parse_corpus(text, corpus_format::text, "small");
  EXPECT_TRUE(c);
  return std::move(*c);
}

train_options small_options() {
  train_options o;
  o.dim = 16;
  o.window = 3;
  o.negative = 3;
  o.epochs = 2;
  o.threads = 1;
  o.batch_words = 500;
  o.sample = 1e-2;
  return o;
}

caf::expected<word_vectors> train_fresh(const corpus& c, const train_options& o,
                                        train_report* report = nullptr) {
  auto s = ops::session::open({});
  if (!s)
    return std::move(s.error());
  auto r = train(**s, c, o);
  if (!r)
    return std::move(r.error());
  if (report != nullptr)
    *report = *r;
  return export_vectors(**s, c, o);
}

TEST(word2vec_trainer, one_thread_and_a_fixed_seed_give_identical_vectors) {
  auto c = small_corpus();
  auto a = train_fresh(c, small_options());
  auto b = train_fresh(c, small_options());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->words, b->words);
  EXPECT_EQ(a->vectors, b->vectors);
  auto other_seed = small_options();
  other_seed.seed = 2;
  auto d = train_fresh(c, other_seed);
  ASSERT_TRUE(d);
  EXPECT_NE(a->vectors, d->vectors);
}

TEST(word2vec_trainer, sentences_are_trained_in_an_order_shuffled_by_the_seed) {
  auto c = small_corpus();
  std::vector<uint32_t> corpus_order(c.sentences());
  std::iota(corpus_order.begin(), corpus_order.end(), 0u);
  auto order_of = [&](uint64_t seed, bool in_order) {
    auto o = small_options();
    o.seed = seed;
    o.in_order = in_order;
    return sentence_order(c, o);
  };
  struct order_case {
    uint64_t seed;
    bool in_order;
    bool shuffled;
  };
  for (auto x : {order_case{1, false, true}, order_case{2, false, true}, order_case{1, true, false},
                 order_case{2, true, false}}) {
    auto order = order_of(x.seed, x.in_order);
    EXPECT_EQ(order == corpus_order, !x.shuffled) << x.seed << " " << x.in_order;
    EXPECT_EQ(order, order_of(x.seed, x.in_order)) << "the same seed, the same order";
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, corpus_order) << "every sentence exactly once";
  }
  EXPECT_NE(order_of(1, false), order_of(2, false));
}

TEST(word2vec_trainer, batches_are_sized_to_the_corpus_unless_given) {
  struct size_case {
    size_t tokens;
    uint32_t given;
    uint32_t expected;
  };
  for (auto x :
       {size_case{10, 0, 1000}, size_case{64 * 1000, 0, 1000}, size_case{64 * 7100, 0, 7100},
        size_case{64 * 20000, 0, 20000}, size_case{64 * 50000, 0, 20000}, size_case{10, 7, 7},
        size_case{64 * 50000, 50000, 50000}}) {
    corpus c;
    c.tokens.resize(x.tokens);
    train_options o;
    o.batch_words = x.given;
    EXPECT_EQ(batch_words_for(c, o), x.expected) << x.tokens << " tokens, given " << x.given;
  }
}

TEST(word2vec_trainer, resuming_from_a_mid_epoch_checkpoint_equals_an_uninterrupted_run) {
  auto c = small_corpus();
  auto o = small_options();
  train_report full_report;
  auto full = train_fresh(c, o, &full_report);
  ASSERT_TRUE(full) << render(full.error());
  auto per_epoch = full_report.last.batches_total / o.epochs;
  ASSERT_GE(per_epoch, 4u);

  auto dir = std::filesystem::temp_directory_path() / "darcy-w2v-resume-test";
  std::filesystem::remove_all(dir);
  auto stop = o;
  stop.stop_after_batches = per_epoch / 2; // half of the first epoch
  stop.checkpoint_to = dir.string();
  train_report stopped;
  ASSERT_TRUE(train_fresh(c, stop, &stopped));
  EXPECT_TRUE(stopped.stopped_early);
  EXPECT_EQ(stopped.last.batches_done, per_epoch / 2);

  auto resume = o;
  resume.resume_from = dir.string();
  auto resumed = train_fresh(c, resume);
  ASSERT_TRUE(resumed) << render(resumed.error());
  EXPECT_EQ(resumed->words, full->words);
  EXPECT_EQ(resumed->vectors, full->vectors);
  std::filesystem::remove_all(dir);
}

TEST(word2vec_trainer, resuming_with_other_settings_or_another_name_is_refused) {
  auto c = small_corpus();
  auto o = small_options();
  auto dir = std::filesystem::temp_directory_path() / "darcy-w2v-resume-mismatch-test";
  std::filesystem::remove_all(dir);
  auto stop = o;
  stop.stop_after_batches = 2;
  stop.checkpoint_to = dir.string();
  ASSERT_TRUE(train_fresh(c, stop));
  for (auto change : {+[](train_options& x) { x.batch_words = 250; },
                      +[](train_options& x) { x.name = "other"; }}) {
    auto resume = o;
    change(resume);
    resume.resume_from = dir.string();
    auto resumed = train_fresh(c, resume);
    ASSERT_FALSE(resumed);
    EXPECT_TRUE(is(resumed.error(), errc::invalid_argument)) << render(resumed.error());
  }
  std::filesystem::remove_all(dir);
}

// With negatives drawn here (word2vec.c's way) or by the service's candidate sampler (the
// paper's), as the first batch finds the service without rows and draws its own.
TEST(word2vec_trainer, related_words_end_up_closer_than_unrelated_ones) {
  for (auto sampler : {negative_source::local, negative_source::service}) {
    SCOPED_TRACE(sampler == negative_source::local ? "local negatives" : "service negatives");
    auto c = small_corpus();
    auto o = small_options();
    o.epochs = 5;
    o.sampler = sampler;
    train_report report;
    auto v = train_fresh(c, o, &report);
    ASSERT_TRUE(v);
    auto row = [&](const std::string& w) {
      auto at = std::find(v->words.begin(), v->words.end(), w) - v->words.begin();
      Eigen::VectorXf x = v->vectors.row(at).transpose();
      return Eigen::VectorXf{x.normalized()};
    };
    EXPECT_GT(row("cat").dot(row("dog")), row("cat").dot(row("road")) + 0.2f);
    EXPECT_GT(row("moon").dot(row("star")), row("moon").dot(row("wheel")) + 0.2f);
    if (sampler == negative_source::service) {
      EXPECT_EQ(report.local_sampled_batches, 1u);
      EXPECT_EQ(report.service_sampled_batches, report.last.batches_done - 1);
    } else {
      EXPECT_EQ(report.local_sampled_batches + report.service_sampled_batches, 0u);
    }
  }
}

TEST(word2vec_trainer, vocabulary_cap_maps_rare_words_to_oov) {
  auto c = small_corpus();
  auto o = small_options();
  o.vocab_cap = 4;
  o.epochs = 1;
  auto v = train_fresh(c, o);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->words.size(), 5u);
  EXPECT_EQ(v->words.back(), oov_key);
}

TEST(word2vec_trainer, invalid_options_are_refused) {
  auto c = small_corpus();
  auto s = ops::session::open({});
  ASSERT_TRUE(s);
  struct bad_case {
    const char* what;
    void (*change)(train_options&);
  };
  std::vector<bad_case> cases{
    {"dim 0", [](train_options& o) { o.dim = 0; }},
    {"window 0", [](train_options& o) { o.window = 0; }},
    {"epochs 0", [](train_options& o) { o.epochs = 0; }},
    {"threads 0", [](train_options& o) { o.threads = 0; }},
    {"alpha 0", [](train_options& o) { o.alpha = 0; }},
    {"a service pool of 0",
     [](train_options& o) {
       o.sampler = negative_source::service;
       o.service_pool = 0;
     }},
    {"a min_count no word reaches", [](train_options& o) { o.min_count = 1u << 30; }}};
  for (auto& bad : cases) {
    auto o = small_options();
    bad.change(o);
    auto r = train(**s, c, o);
    ASSERT_FALSE(r) << bad.what;
    EXPECT_TRUE(is(r.error(), errc::invalid_argument)) << bad.what;
  }
  auto o = small_options();
  o.resume_from = "/nonexistent/darcy-checkpoint";
  EXPECT_FALSE(train(**s, c, o));
}

} // namespace
} // namespace darcy::word2vec
