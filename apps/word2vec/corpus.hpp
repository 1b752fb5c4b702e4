// A training corpus in memory: its text once, tokens as views into it, sentence bounds, and
// word frequency statistics (for subsampling, negative sampling and vocabulary caps). The
// model itself has no dictionary: its rows are keyed by the raw words in the service.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

namespace darcy::word2vec {

/// text: whitespace-separated tokens, a line per sentence. brown: the Brown corpus's tagged
/// text ("word/tag" tokens, a line per sentence): tags are stripped and words lower-cased.
enum class corpus_format { text, brown };

/// A word's statistics; `word` views the corpus text.
struct word_stat {
  std::string_view word;
  uint64_t count = 0;
};

struct token {
  std::string_view word;
  /// Index of the word's statistics in corpus::words.
  uint32_t stat = 0;
};

/// Sentences longer than this are split, as word2vec.c does.
inline constexpr size_t max_sentence_length = 1000;

struct corpus {
  /// Held by pointer so that the views into it survive moves of the corpus.
  std::shared_ptr<const std::string> text;
  std::vector<token> tokens;
  /// Sentence i is tokens [sentence_ends[i-1], sentence_ends[i]) (from 0 for i = 0).
  std::vector<uint32_t> sentence_ends;
  /// Every distinct word, most frequent first (ties by word).
  std::vector<word_stat> words;

  size_t sentences() const { return sentence_ends.size(); }
  size_t sentence_begin(size_t i) const { return i == 0 ? 0 : sentence_ends[i - 1]; }
};

/// Reads `path`: a file, or a directory whose regular files are read in name order (for the
/// brown format, those listed in its cats.txt when it has one). Fails with a clear error:
/// errc::not_found, errc::invalid_argument for binary data or invalid UTF-8 (with the file
/// and line), errc::empty_batch when there is no token at all.
caf::expected<corpus> read_corpus(const std::string& path, corpus_format format);

/// Builds a corpus from text already in memory, as read_corpus does for one file; `origin`
/// names it in errors.
caf::expected<corpus> parse_corpus(std::string text, corpus_format format,
                                   const std::string& origin);

/// "text" or "brown"; errc::invalid_argument otherwise.
caf::expected<corpus_format> parse_format(const std::string& name);

} // namespace darcy::word2vec
