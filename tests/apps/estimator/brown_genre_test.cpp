#include "apps/estimator/brown_genre.hpp"

#include <fstream>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::estimator_apps {
namespace {

/// 20 documents of 3 sentences of 10 words, "news" (vote and senate words) or "fiction"
/// (ghost and night words) by d % 4 < 2, so that test documents 9 and 19 hold one of each.
void write_genres(const std::string& dir) {
  std::ofstream cats{dir + "/cats.txt"};
  for (int d = 0; d < 20; ++d) {
    bool news = d % 4 < 2;
    auto name = "doc" + std::to_string(d);
    cats << name << (news ? " news\n" : " fiction\n");
    std::ofstream f{dir + "/" + name};
    for (int s = 0; s < 3; ++s) {
      for (int i = 0; i < 10; ++i)
        f << (news ? (i % 2 ? "Vote/nn " : "senate/nn ") : (i % 2 ? "ghost/nn " : "night/nn "));
      f << "\n\n";
    }
  }
}

TEST(brown_genre, passages_are_whole_sentences_split_by_document_with_aligned_successors) {
  test::temp_dir dir{"genres"};
  write_genres(dir.path());
  auto data = load_brown_genres(dir.path(), 15);
  ASSERT_TRUE(data) << render(data.error());
  EXPECT_EQ(data->categories, (std::vector<std::string>{"fiction", "news"}));
  // 30 words a document: one passage of 2 sentences (20 ≥ 15), then a last one of 10 ≥ 15/2.
  EXPECT_EQ(data->train->rows(), 18u * 2);
  EXPECT_EQ(data->test->rows(), 2u * 2);
  auto& words = data->train->features.at("words").strings;
  auto& next = data->train->features.at("next_words").strings;
  ASSERT_EQ(words[0].size(), 20u);
  EXPECT_EQ(words[0][0], "senate") << "tags stripped";
  EXPECT_EQ(words[0][1], "vote") << "lower-cased";
  EXPECT_EQ(next[0][0], "vote");
  EXPECT_EQ(next[0].back(), "</s>");
  EXPECT_EQ(words[1].size(), 10u);
  EXPECT_EQ(data->train->labels(0, 0), 1.0f) << "doc0 is news";
  EXPECT_EQ(data->test->labels(0, 0), 1.0f) << "doc9 is news";
  EXPECT_EQ(data->test->labels(2, 0), 0.0f) << "doc19 is fiction";

  auto whole = load_brown_genres(dir.path(), 50);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->train->rows(), 0u + 18)
    << "a document shorter than a passage is one when ≥ half";
  EXPECT_EQ(whole->validation, nullptr);

  // With a validation split, documents 4 and 14 (news and fiction) leave the training data.
  auto split = load_brown_genres(dir.path(), 15, true);
  ASSERT_TRUE(split) << render(split.error());
  EXPECT_EQ(split->train->rows(), 16u * 2);
  ASSERT_NE(split->validation, nullptr);
  EXPECT_EQ(split->validation->rows(), 2u * 2);
  EXPECT_EQ(split->validation->labels(0, 0), 1.0f) << "doc4 is news";
  EXPECT_EQ(split->validation->labels(2, 0), 0.0f) << "doc14 is fiction";
  EXPECT_EQ(split->test->rows(), 2u * 2);
}

TEST(brown_genre, bad_corpora_and_options_are_refused) {
  test::temp_dir dir{"no_genres"};
  auto missing = load_brown_genres(dir.path(), 60);
  ASSERT_FALSE(missing);
  EXPECT_TRUE(is(missing.error(), errc::not_found)) << render(missing.error());
  write_genres(dir.path());
  auto zero = load_brown_genres(dir.path(), 0);
  ASSERT_FALSE(zero);
  EXPECT_TRUE(is(zero.error(), errc::invalid_config));
  struct {
    const char* what;
    nlohmann::json options;
  } bad[] = {
    {"a zero batch", {{"batch", 0}}},
    {"zero hash buckets", {{"hash_buckets", 0}}},
    {"a string for a number", {{"embedding_dim", "wide"}}},
  };
  for (auto& b : bad) {
    auto o = parse_brown_genre_options(b.options);
    ASSERT_FALSE(o) << b.what;
    EXPECT_TRUE(is(o.error(), errc::invalid_config)) << b.what << ": " << render(o.error());
  }
  brown_genre_options o;
  o.batch = 7;
  auto back = parse_brown_genre_options(brown_genre_job_options(o));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->batch, 7u) << "the job options round-trip";
}

/// A model small enough for the tiny corpus of write_genres, trained for `epochs`.
brown_genre_options tiny_model(uint32_t epochs) {
  brown_genre_options o;
  o.epochs = epochs;
  o.batch = 8;
  o.hash_buckets = 64;
  o.bigram_buckets = 64;
  o.embedding_dim = 4;
  o.hidden_units = {8};
  o.threads = 1;
  o.quiet = true;
  o.validation = false;
  return o;
}

TEST(brown_genre, wide_and_deep_learns_the_genres_beyond_the_majority) {
  test::temp_dir dir{"learn_genres"};
  write_genres(dir.path());
  auto data = load_brown_genres(dir.path(), 15);
  ASSERT_TRUE(data);
  auto o = tiny_model(10);
  auto r = run_brown_genre(o, *data);
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_EQ(r->categories, 2u);
  EXPECT_DOUBLE_EQ(r->majority_accuracy, 0.5);
  EXPECT_DOUBLE_EQ(r->test_accuracy, 1.0);
  EXPECT_DOUBLE_EQ(r->bag_of_words_accuracy, 1.0);
  EXPECT_EQ(r->steps, 10u * 5) << "36 passages in batches of 8: 5 steps an epoch";
}

TEST(brown_genre, each_model_is_read_at_its_best_epoch_on_the_validation_passages) {
  test::temp_dir dir{"genre_validation"};
  write_genres(dir.path());
  auto o = tiny_model(6);
  auto refused = run_brown_genre({.validation = true}, *load_brown_genres(dir.path(), 15));
  ASSERT_FALSE(refused) << "validation without a split";
  EXPECT_TRUE(is(refused.error(), errc::invalid_config));
  o.validation = true;
  auto data = load_brown_genres(dir.path(), 15, true);
  ASSERT_TRUE(data);
  auto r = run_brown_genre(o, *data);
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_EQ(r->validation_passages, 4u);
  for (auto [epochs, chosen, test] :
       {std::tuple{&r->epochs, r->epoch, r->test_accuracy},
        std::tuple{&r->bag_of_words_epochs, r->bag_of_words_epoch, r->bag_of_words_accuracy}}) {
    ASSERT_EQ(epochs->size(), 6u);
    size_t best = 0;
    for (size_t i = 0; i < epochs->size(); ++i)
      if ((*epochs)[i].validation > (*epochs)[best].validation)
        best = i;
    EXPECT_EQ(chosen, best + 1);
    EXPECT_EQ(test, (*epochs)[best].test);
  }
  EXPECT_EQ(r->steps, 6u * 4) << "32 passages in batches of 8: 4 steps an epoch";
}

TEST(brown_genre, wide_and_deep_appends_its_loss_to_the_summary_every_100_steps) {
  test::temp_dir dir{"genre_summary"};
  write_genres(dir.path());
  auto data = load_brown_genres(dir.path(), 15);
  ASSERT_TRUE(data);
  auto o = tiny_model(40); // 200 steps of Wide & Deep
  o.summary = dir.path() + "/summary.jsonl";
  auto r = run_brown_genre(o, *data);
  ASSERT_TRUE(r) << render(r.error());
  std::ifstream in{o.summary};
  std::vector<uint64_t> steps;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object() && j["loss"].is_number()) << line;
    steps.push_back(j.value("step", uint64_t{0}));
  }
  EXPECT_EQ(steps, (std::vector<uint64_t>{100, 200})) << "the baseline writes none";
}

} // namespace
} // namespace darcy::estimator_apps
