// Intrinsic evaluation of word vectors, as word2vec's compute-accuracy and the usual
// similarity benchmarks do it: analogy accuracy over the most frequent words, and Spearman's
// rho between cosine similarity and human scores. Words compare case-insensitively.
#pragma once

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <caf/expected.hpp>

#include "apps/word2vec/vectors_io.hpp"

namespace darcy::word2vec {

struct eval_options {
  /// Analogies use only the first (most frequent) this many words, as compute-accuracy's
  /// threshold does.
  size_t analogy_vocab = 30000;
  /// When set, a word the vectors lack reads the vector of `fallback` (the vocabulary-cap
  /// experiment's oov), instead of making its item uncovered.
  std::string fallback;
  /// When set, only items whose words are all in it count (one item set for many models).
  const std::unordered_set<std::string>* universe = nullptr;
};

struct analogy_result {
  size_t questions = 0;
  /// Questions whose four words are covered.
  size_t seen = 0;
  size_t correct = 0;
  double accuracy() const { return seen == 0 ? 0.0 : static_cast<double>(correct) / seen; }
};

struct similarity_result {
  size_t pairs = 0;
  size_t covered = 0;
  /// NaN when fewer than two pairs are covered.
  double spearman = 0;
  double coverage() const { return pairs == 0 ? 0.0 : static_cast<double>(covered) / pairs; }
};

/// `file` holds ": section" lines and "a b c d" questions (d = b - a + c). errc::not_found
/// when it is missing, errc::corrupt_file (with the line) when a question has not 4 words.
caf::expected<analogy_result> evaluate_analogies(const word_vectors& v, const std::string& file,
                                                 const eval_options& opts = {});

/// `file` holds '#' comments and "w1<TAB>w2<TAB>score" lines (WordSim-353, SimLex-999).
caf::expected<similarity_result> evaluate_similarity(const word_vectors& v, const std::string& file,
                                                     const eval_options& opts = {});

/// The k words nearest to `word` by cosine among `v`, searched in process, `word` left out;
/// errc::not_found when `v` lacks `word` (compared exactly).
caf::expected<std::vector<std::pair<std::string, float>>> nearest_words(const word_vectors& v,
                                                                        const std::string& word,
                                                                        uint32_t k);

} // namespace darcy::word2vec
