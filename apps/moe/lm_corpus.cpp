#include "apps/moe/lm_corpus.hpp"

#include <algorithm>
#include <sstream>

#include "base/atomic_file.hpp"
#include "messages/error.hpp"
#include "stores/data/brown_corpus.hpp"

namespace darcy::moe {

namespace {

/// Appends the document's sentences (one per non-empty line of "word/tag" tokens) to `out`,
/// words untagged and lower-cased, each sentence ended by end_of_sentence.
caf::error append_document(const std::string& path, std::vector<std::string>& out) {
  auto text = base::read_file(path);
  if (!text)
    return std::move(text.error());
  std::istringstream lines{*text};
  for (std::string line; std::getline(lines, line);) {
    auto words = stores::tagged_words(line);
    for (auto& w : words)
      out.push_back(std::move(w.word));
    if (!words.empty())
      out.emplace_back(end_of_sentence);
  }
  return {};
}

} // namespace

caf::expected<lm_corpus> load_brown_lm(const std::string& dir, uint32_t min_count) {
  auto catalog = stores::read_brown_catalog(dir);
  if (!catalog)
    return std::move(catalog.error());
  lm_corpus c;
  std::vector<std::string>* parts[3] = {&c.train.words, &c.valid.words, &c.test.words};
  for (size_t index = 0; index < catalog->documents.size(); ++index) {
    auto part = index % 20 == 18 ? 1 : index % 20 == 19 ? 2 : 0;
    if (auto err = append_document(catalog->documents[index].path, *parts[part]))
      return err;
    ++c.documents[part];
  }
  if (c.train.words.empty() || c.valid.words.empty() || c.test.words.empty())
    return make_error(errc::empty_batch, dir + ": too few documents for a 90/5/5 split");
  std::unordered_map<std::string, uint64_t> counts;
  for (auto& w : c.train.words)
    ++counts[w];
  std::vector<std::pair<std::string, uint64_t>> kept;
  uint64_t unknown = 0;
  for (auto& [w, n] : counts)
    if (n >= min_count && w != end_of_sentence)
      kept.emplace_back(w, n);
    else if (w != end_of_sentence)
      unknown += n;
  if (kept.empty())
    return make_error(errc::invalid_config,
                      "no training word occurs " + std::to_string(min_count) +
                        " times, so the output vocabulary would hold only the unknown word and "
                        "the end of sentence: lower the minimum count");
  std::sort(kept.begin(), kept.end(), [](auto& a, auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  c.vocabulary = {end_of_sentence, unknown_word};
  c.counts = {counts[end_of_sentence], std::max<uint64_t>(unknown, 1)};
  std::unordered_map<std::string, uint64_t> id;
  id[end_of_sentence] = 0;
  for (auto& [w, n] : kept) {
    id[w] = c.vocabulary.size();
    c.vocabulary.push_back(w);
    c.counts.push_back(n);
  }
  for (auto* s : {&c.train, &c.valid, &c.test}) {
    s->ids.reserve(s->words.size());
    for (auto& w : s->words) {
      auto it = id.find(w);
      s->ids.push_back(it == id.end() ? 1 : it->second);
    }
  }
  return c;
}

} // namespace darcy::moe
