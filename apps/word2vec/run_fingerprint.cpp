#include "apps/word2vec/run_fingerprint.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "apps/word2vec/trainer.hpp"
#include "compute/hash.hpp"
#include "messages/error.hpp"

namespace darcy::word2vec {

namespace {

template <class T>
std::string text_of(const T& x) {
  std::ostringstream out;
  out.precision(9);
  out << x;
  return out.str();
}

// Each entry: the name a user knows it by (a flag, or a corpus property), and its value.
std::vector<std::pair<std::string, std::string>> fingerprint(const corpus& c,
                                                             const train_options& o) {
  std::string_view text{*c.text};
  auto head = text.substr(0, std::min(text.size(), fingerprint_head_bytes));
  return {{"corpus-bytes", text_of(text.size())},
          {"corpus-tokens", text_of(c.tokens.size())},
          {"corpus-head-hash", text_of(compute::hash_key(head))},
          {"--name", o.name},
          {"--dim", text_of(o.dim)},
          {"--window", text_of(o.window)},
          {"--negative", text_of(o.negative)},
          {"--sample", text_of(o.sample)},
          {"--epochs", text_of(o.epochs)},
          {"--alpha", text_of(o.alpha)},
          {"--seed", text_of(o.seed)},
          {"--min-count", text_of(o.min_count)},
          {"--vocab-cap", text_of(o.vocab_cap)},
          {"--batch-words", text_of(batch_words_for(c, o))},
          {"--in-order", o.in_order ? "yes" : "no"}};
}

caf::error unparsable(const std::string& text) {
  return make_error(errc::corrupt_file, "unexpected input position '" + text + "'");
}

} // namespace

std::string encode_position(uint64_t batches, const corpus& c, const train_options& o) {
  std::string result = "batch=" + std::to_string(batches);
  for (auto& [key, value] : fingerprint(c, o))
    result += " " + key + "=" + value;
  return result;
}

caf::expected<uint64_t> decode_position(const std::string& text, const corpus& c,
                                        const train_options& o) {
  std::istringstream in{text};
  std::string field;
  std::map<std::string, std::string> stored;
  while (in >> field) {
    auto eq = field.find('=');
    if (eq == std::string::npos || eq == 0)
      return unparsable(text);
    stored[field.substr(0, eq)] = field.substr(eq + 1);
  }
  auto batch = stored.find("batch");
  if (batch == stored.end() || batch->second.empty() ||
      batch->second.find_first_not_of("0123456789") != std::string::npos ||
      batch->second.size() > 19)
    return unparsable(text);
  std::string differences;
  if (stored.size() > 1) {
    for (auto& [key, value] : fingerprint(c, o)) {
      auto it = stored.find(key);
      auto was = it == stored.end() ? std::string{"(none)"} : it->second;
      if (was != value)
        differences +=
          (differences.empty() ? "" : "; ") + key + ": checkpoint " + was + ", this run " + value;
    }
  }
  if (!differences.empty())
    return make_error(errc::invalid_argument,
                      "the checkpoint was written by another run (" + differences + ")");
  return static_cast<uint64_t>(std::stoull(batch->second));
}

} // namespace darcy::word2vec
