#include "apps/examples/logreg/logreg_data.hpp"

#include <fstream>
#include <random>
#include <sstream>

#include "base/atomic_file.hpp"
#include "compute/hash.hpp"
#include "messages/error.hpp"

namespace darcy::examples {

std::string feature_key(std::string_view word, uint64_t buckets) {
  return "f" + std::to_string(compute::hash_key(word) % buckets);
}

caf::expected<std::vector<labelled_example>> read_examples(const std::string& path,
                                                           uint64_t buckets) {
  auto text = base::read_file(path);
  if (!text)
    return std::move(text.error());
  std::vector<labelled_example> result;
  std::istringstream lines{*text};
  std::string line;
  for (size_t number = 1; std::getline(lines, line); ++number) {
    if (line.empty())
      continue;
    auto bad = [&](const std::string& why) {
      return make_error(errc::invalid_argument, path + ":" + std::to_string(number) + ": " + why);
    };
    auto tab = line.find('\t');
    if (tab == std::string::npos)
      return bad("expected label<TAB>text");
    auto label = line.substr(0, tab);
    if (label != "0" && label != "1")
      return bad("the label must be 0 or 1, not '" + label + "'");
    labelled_example example;
    example.label = label == "1" ? 1.0f : 0.0f;
    std::istringstream words{line.substr(tab + 1)};
    std::string word;
    while (words >> word)
      example.keys.push_back(feature_key(word, buckets));
    if (example.keys.empty())
      return bad("no words");
    example.keys.push_back("bias");
    result.push_back(std::move(example));
  }
  if (result.empty())
    return make_error(errc::invalid_argument, path + ": no examples");
  return result;
}

caf::error generate_examples(const std::string& path, uint32_t lines, uint64_t seed) {
  std::mt19937_64 rng{seed};
  auto pick = [&](const char* prefix, uint64_t n) { return prefix + std::to_string(rng() % n); };
  std::string out;
  for (uint32_t i = 0; i < lines; ++i) {
    bool positive = rng() % 2 == 0;
    out += positive ? "1\t" : "0\t";
    for (int w = 0; w < 8; ++w)
      out += pick("word", 200) + " ";
    for (int w = 0; w < 2; ++w)
      out += pick(positive ? "good" : "bad", 20) + " ";
    out.back() = '\n';
  }
  return base::write_file_atomically(path, out);
}

} // namespace darcy::examples
