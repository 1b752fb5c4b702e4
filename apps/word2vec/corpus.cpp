#include "apps/word2vec/corpus.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "messages/error.hpp"
#include "stores/data/brown_corpus.hpp"

namespace darcy::word2vec {

namespace {

namespace fs = std::filesystem;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

// The 1-based line of byte `at`.
size_t line_of(const std::string& text, size_t at) {
  return 1 +
         static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

// Length of the UTF-8 sequence starting at text[i], or 0 when it is invalid (overlong forms,
// surrogates and code points past U+10FFFF included).
size_t utf8_length(const std::string& text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  auto c = byte(i);
  size_t n;
  uint32_t cp;
  if (c < 0x80)
    return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size())
    return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < smallest[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

// Refuses binary data (NUL or other control bytes) and invalid UTF-8, naming the line.
caf::error check_text(const std::string& text, const std::string& origin) {
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\n' && !is_space(static_cast<char>(c)))
      return make_error(errc::invalid_argument, origin + ":" + std::to_string(line_of(text, i)) +
                                                  ": binary data (control byte " +
                                                  std::to_string(c) + "), expected text");
    auto n = utf8_length(text, i);
    if (n == 0)
      return make_error(errc::invalid_argument, origin + ":" + std::to_string(line_of(text, i)) +
                                                  ": invalid UTF-8 at byte " + std::to_string(i));
    i += n;
  }
  return {};
}

// Strips Brown tags ("word/tag" -> "word") and lower-cases ASCII letters, line by line.
std::string untag_brown(const std::string& text) {
  std::string result;
  result.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '\n' || is_space(text[i])) {
      result.push_back(text[i++]);
      continue;
    }
    auto end = i;
    while (end < text.size() && text[end] != '\n' && !is_space(text[end]))
      ++end;
    std::string_view tok{text.data() + i, end - i};
    auto slash = tok.rfind('/');
    if (slash != std::string_view::npos && slash > 0)
      tok = tok.substr(0, slash);
    for (char c : tok)
      result.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    i = end;
  }
  return result;
}

caf::expected<std::string> read_file(const fs::path& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return make_error(errc::not_found, "cannot read corpus file " + path.string());
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// The files of a corpus directory, in name order; for brown, those its cats.txt lists (each
// must exist: reading it fails otherwise).
caf::expected<std::vector<fs::path>> corpus_files(const fs::path& dir, corpus_format format) {
  std::vector<fs::path> files;
  if (format == corpus_format::brown && fs::is_regular_file(dir / "cats.txt")) {
    auto catalog = stores::read_brown_catalog(dir.string());
    if (!catalog)
      return std::move(catalog.error());
    for (auto& d : catalog->documents)
      files.emplace_back(d.path);
  } else {
    for (auto& entry : fs::directory_iterator{dir})
      if (entry.is_regular_file())
        files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace

caf::expected<corpus_format> parse_format(const std::string& name) {
  if (name == "text")
    return corpus_format::text;
  if (name == "brown")
    return corpus_format::brown;
  return make_error(errc::invalid_argument,
                    "unknown corpus format '" + name + "' (expected text or brown)");
}

namespace {

// Tokenizes and counts `text`, already checked by check_text.
caf::expected<corpus> build_corpus(std::string text, corpus_format format,
                                   const std::string& origin) {
  corpus result;
  result.text = std::make_shared<const std::string>(
    format == corpus_format::brown ? untag_brown(text) : std::move(text));
  const auto& t = *result.text;
  std::unordered_map<std::string_view, uint32_t> index;
  index.reserve(1 << 16);
  std::vector<word_stat> words;
  size_t sentence_start = 0;
  auto end_sentence = [&] {
    if (result.tokens.size() > sentence_start) {
      result.sentence_ends.push_back(static_cast<uint32_t>(result.tokens.size()));
      sentence_start = result.tokens.size();
    }
  };
  for (size_t i = 0; i < t.size();) {
    if (t[i] == '\n') {
      end_sentence();
      ++i;
      continue;
    }
    if (is_space(t[i])) {
      ++i;
      continue;
    }
    auto end = i;
    while (end < t.size() && t[end] != '\n' && !is_space(t[end]))
      ++end;
    std::string_view word{t.data() + i, end - i};
    auto [at, added] = index.try_emplace(word, static_cast<uint32_t>(words.size()));
    if (added)
      words.push_back({word, 0});
    ++words[at->second].count;
    result.tokens.push_back({word, at->second});
    if (result.tokens.size() - sentence_start == max_sentence_length)
      end_sentence();
    i = end;
  }
  end_sentence();
  if (result.tokens.empty())
    return make_error(errc::empty_batch, origin + ": the corpus has no words");
  // Most frequent first; tokens follow their words to the new order.
  std::vector<uint32_t> order(words.size());
  for (uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return words[a].count != words[b].count ? words[a].count > words[b].count
                                            : words[a].word < words[b].word;
  });
  std::vector<uint32_t> rank(words.size());
  result.words.reserve(words.size());
  for (uint32_t r = 0; r < order.size(); ++r) {
    rank[order[r]] = r;
    result.words.push_back(words[order[r]]);
  }
  for (auto& tok : result.tokens)
    tok.stat = rank[tok.stat];
  return result;
}

} // namespace

caf::expected<corpus> parse_corpus(std::string text, corpus_format format,
                                   const std::string& origin) {
  if (auto err = check_text(text, origin))
    return err;
  return build_corpus(std::move(text), format, origin);
}

caf::expected<corpus> read_corpus(const std::string& path, corpus_format format) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return make_error(errc::not_found, "corpus " + path + " does not exist");
  if (!fs::is_directory(path, ec)) {
    auto text = read_file(path);
    if (!text)
      return std::move(text.error());
    return parse_corpus(std::move(*text), format, path);
  }
  auto files = corpus_files(path, format);
  if (!files)
    return std::move(files.error());
  std::string all;
  for (auto& file : *files) {
    auto text = read_file(file);
    if (!text)
      return std::move(text.error());
    if (auto err = check_text(*text, file.string()))
      return err;
    all += *text;
    all += '\n';
  }
  return build_corpus(std::move(all), format, path);
}

} // namespace darcy::word2vec
