// The language model's data: the Brown corpus split 90/5/5 by document (of every 20 documents
// in cats.txt order, the 19th goes to validation and the 20th to test), each sentence ended
// by an end-of-sentence symbol, and the output vocabulary the full-softmax evaluation scores
// against. The model's input rows are looked up by the raw words themselves.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/expected.hpp>

namespace darcy::moe {

inline constexpr const char* end_of_sentence = "</s>";
inline constexpr const char* unknown_word = "<unk>";

/// A token stream as raw words (the input) and output-vocabulary ids (the labels).
struct lm_stream {
  std::vector<std::string> words;
  std::vector<uint64_t> ids;
};

struct lm_corpus {
  /// end_of_sentence, unknown_word, then every training word seen at least min_count times,
  /// most frequent first. A word outside it is labelled unknown_word.
  std::vector<std::string> vocabulary;
  /// Training count of each vocabulary entry (unknown_word: of the words it stands for).
  std::vector<uint64_t> counts;
  lm_stream train, valid, test;
  uint32_t documents[3] = {0, 0, 0};
};

/// Reads the Brown corpus directory (its cats.txt and tagged files). errc::not_found when it
/// or cats.txt is missing; the reader's errors for damaged files.
caf::expected<lm_corpus> load_brown_lm(const std::string& dir, uint32_t min_count);

} // namespace darcy::moe
