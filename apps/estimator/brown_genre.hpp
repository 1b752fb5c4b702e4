// `darcy estimator brown-genre`: Wide & Deep on Brown passages to their document's category.
// The wide part sees hashed words and the words' bigrams (an aligned cross of each word with
// the next); the deep part sees the raw words through a dynamic_embedding_column. Every table
// lives in the embedding service, so the model has no dictionary and only rows in use cost
// memory. It reports its test accuracy beside two baselines.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "ops/estimator/estimator.hpp"
#include "ops/session.hpp"

namespace darcy::estimator_apps {

struct brown_genre_options {
  /// The Brown corpus directory (cats.txt and the tagged files; make demo fetches it).
  std::string corpus;
  /// A passage is consecutive sentences of one document, at least this many words.
  uint32_t passage_words = 150;
  /// With the validation split, each model's test accuracy is taken at its best epoch.
  uint32_t epochs = 8;
  size_t batch = 64;
  uint64_t hash_buckets = 1 << 18;
  /// 0: the wide part has no bigram cross.
  uint64_t bigram_buckets = 1 << 20;
  uint32_t embedding_dim = 32;
  std::vector<uint32_t> hidden_units = {64};
  /// The deep part's dropout after each hidden layer, in training.
  float dropout = 0;
  /// Adam's rate of the dense variables, the baseline's included.
  double learning_rate = 1e-3;
  /// Adam's learning rates in the embedding service: of the deep part's word table, and of the
  /// wide part's tables (the baseline's too). As TF's canned Wide & Deep trains its two parts
  /// with optimizers of their own.
  float embedding_learning_rate = 0.03f;
  float wide_learning_rate = 0.03f;
  /// Hold out every tenth training document as validation: each model is evaluated after
  /// every epoch, and its test accuracy is the one at its best validation epoch. Off: the
  /// test accuracy after the last epoch.
  bool validation = true;
  size_t threads = 2;
  uint64_t seed = 1;
  std::string model_dir;
  /// A summary_writer's JSONL file for the Wide & Deep model (every 100 steps), when set.
  std::string summary;
  bool quiet = false;
};

/// The options as a distributed job's JSON (corpus, passage_words, batch, hash_buckets,
/// bigram_buckets, embedding_dim, hidden, dropout, learning_rate, embedding_learning_rate,
/// wide_learning_rate, threads,
/// seed), and back; the parse
/// keeps `defaults` for absent fields. errc::invalid_config for a field of the wrong type or
/// a zero size.
nlohmann::json brown_genre_job_options(const brown_genre_options& o);
caf::expected<brown_genre_options> parse_brown_genre_options(const nlohmann::json& j,
                                                             brown_genre_options defaults = {});

/// Passages as "words" and "next_words" (each word's successor, "</s>" after the last)
/// features, labelled with the index of their document's category in `categories`. Document
/// d (in cats.txt order) is test data when d % 10 == 9 and, with a validation split,
/// validation data when d % 10 == 4; the others are training data.
struct brown_genre_data {
  std::vector<std::string> categories;
  std::shared_ptr<ops::estimator::example_table> train, validation, test;
};

/// errc::not_found when the corpus or its cats.txt is missing; errc::invalid_config for
/// passage_words 0; the reader's errors for damaged files. `validation` null unless asked.
caf::expected<brown_genre_data> load_brown_genres(const std::string& corpus, uint32_t passage_words,
                                                  bool validation = false);

/// The canned Wide & Deep classifier over `classes` categories; its dynamic embedding lives in
/// `s`'s embedding service, which must outlive the model function.
caf::expected<ops::estimator::model_fn> brown_genre_model(const brown_genre_options& o,
                                                          size_t classes, ops::session& s);

/// One model's accuracy after an epoch (validation 0 without a validation split).
struct epoch_accuracy {
  double validation = 0;
  double test = 0;
};

struct brown_genre_result {
  size_t train_passages = 0;
  size_t validation_passages = 0;
  size_t test_passages = 0;
  size_t categories = 0;
  /// Wide & Deep's test accuracy at its chosen epoch (1-based): the best on validation, or
  /// the last.
  double test_accuracy = 0;
  uint32_t epoch = 0;
  /// Always predicting the most frequent training category.
  double majority_accuracy = 0;
  /// A linear classifier on the hashed bag of words alone, trained and chosen the same way.
  double bag_of_words_accuracy = 0;
  uint32_t bag_of_words_epoch = 0;
  /// Each epoch's accuracies, for both models.
  std::vector<epoch_accuracy> epochs, bag_of_words_epochs;
  uint64_t steps = 0;
  double steps_per_second = 0;
};

caf::expected<brown_genre_result> run_brown_genre(const brown_genre_options& o,
                                                  const brown_genre_data& data);

} // namespace darcy::estimator_apps
