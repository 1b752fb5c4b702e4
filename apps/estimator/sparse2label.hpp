// `darcy estimator sparse2label`: the DynamicEmbedding paper's Sparse2Label at Brown's scale. A
// passage's keywords (its common nouns that recur in it, ranked by tf·idf) are its labels, and
// the model tags the passage with them as a hashtag recommender tags a post: it reads the
// passage's words through a dynamic_embedding_column and scores every label through the
// sampled-softmax head. Training runs in rounds on growing data, one Brown category
// added per round, each round warm-started from the last one's checkpoint, so the model's
// tables grow with the data. Each round reports the model's size and recall@10 of held-out
// passages' keywords, beside a most-popular-keywords baseline, as rows of a TSV and a PNG.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "ops/estimator/input.hpp"

namespace darcy::estimator_apps {

struct sparse2label_options {
  /// The Brown corpus directory (make demo fetches it).
  std::string corpus;
  /// A passage is consecutive sentences of one document, at least this many words.
  uint32_t passage_words = 80;
  /// Labels per passage, at most: its recurring nouns with the highest tf·idf.
  uint32_t keywords = 3;
  /// Rounds of training, one category added per round (0: every category).
  uint32_t rounds = 0;
  /// Passes over the data seen so far, per round.
  uint32_t epochs = 10;
  size_t batch = 16;
  /// Width of the rows (at least 2: a label row's last entry is its bias).
  uint32_t embedding_dim = 64;
  uint32_t hidden_units = 128;
  uint32_t num_sampled = 256;
  /// While the label table holds at most this many rows, train on full logits (0: sample).
  uint64_t full_logits_below = 0;
  /// The label table keeps an ANN index, and predictions (and eval's recall) read it.
  bool approximate_top_k = false;
  /// Adam learning rates of the dense layers, and of the service's tables.
  double learning_rate = 3e-3;
  double embedding_learning_rate = 0.01;
  size_t threads = 2;
  uint64_t seed = 1;
  /// Checkpoints, one directory per round, and the report: OUT.tsv and OUT.png.
  std::string model_dir;
  std::string out = "sparse2label";
  /// Where the last round's model is exported for `darcy serve` (empty: no export).
  std::string export_dir;
  bool quiet = false;
};

/// Passages of one category: a "words" feature (the passage's words, punctuation left out) and
/// a "keywords" feature (its labels). Every tenth document (in cats.txt order) is held out.
struct sparse2label_category {
  std::string name;
  std::shared_ptr<ops::estimator::example_table> train, test;
};

/// Categories in cats.txt's sorted order, each with passages that have at least one keyword.
/// errc::not_found when the corpus is missing; errc::invalid_config for passage_words or
/// keywords 0; the reader's errors for damaged files.
caf::expected<std::vector<sparse2label_category>> load_sparse2label(const std::string& corpus,
                                                                    uint32_t passage_words,
                                                                    uint32_t keywords);

/// The keywords of one passage of (word, tag) tokens: common nouns (tags nn and nns, with any
/// -tl/-hl/$ mark) of 3 or more letters that occur at least twice, ranked by count·idf
/// (`document_frequency` of the word among `passages`, ties by the word), the first `limit`.
std::vector<std::string> passage_keywords(
  const std::vector<std::pair<std::string, std::string>>& tokens,
  const std::map<std::string, uint32_t>& document_frequency, size_t passages, size_t limit);

struct sparse2label_round {
  uint32_t round = 0;
  std::string category;
  size_t train_passages = 0;
  size_t test_passages = 0;
  uint64_t global_step = 0;
  /// Rows of the words' and the labels' tables, and the service's bytes for both.
  uint64_t word_rows = 0;
  uint64_t label_rows = 0;
  uint64_t embedding_bytes = 0;
  /// Floats of the dense layers.
  uint64_t dense_parameters = 0;
  double recall_at_10 = 0;
  double recall_at_1 = 0;
  /// The 10 most frequent keywords of the training passages so far, for every passage.
  double popular_recall_at_10 = 0;
  double seconds = 0;
};

/// Trains the rounds and writes o.out + ".tsv" and ".png". errc::invalid_config for empty
/// model_dir, an embedding_dim below 2, or rounds beyond the categories.
caf::expected<std::vector<sparse2label_round>> run_sparse2label(
  const sparse2label_options& o, const std::vector<sparse2label_category>& data);

} // namespace darcy::estimator_apps
