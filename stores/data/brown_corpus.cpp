#include "stores/data/brown_corpus.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "messages/error.hpp"

namespace darcy::stores {

caf::expected<brown_catalog> read_brown_catalog(const std::string& corpus) {
  namespace fs = std::filesystem;
  auto cats = (fs::path{corpus} / "cats.txt").string();
  std::ifstream in{cats};
  if (!in)
    return make_error(errc::not_found, cats + " (the Brown corpus: make demo fetches it)");
  brown_catalog out;
  size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::istringstream fields{line};
    std::string name, category;
    if (fields >> name >> category)
      out.documents.push_back({(fs::path{corpus} / name).string(), category, 0});
    else if (!name.empty())
      return make_error(errc::corrupt_file, cats + ":" + std::to_string(number) + ": '" + line +
                                              "' is not 'DOCUMENT CATEGORY' (a damaged copy? "
                                              "make demo fetches the corpus again)");
  }
  for (auto& d : out.documents)
    out.categories.push_back(d.category);
  std::sort(out.categories.begin(), out.categories.end());
  out.categories.erase(std::unique(out.categories.begin(), out.categories.end()),
                       out.categories.end());
  for (auto& d : out.documents)
    d.label = static_cast<uint32_t>(
      std::lower_bound(out.categories.begin(), out.categories.end(), d.category) -
      out.categories.begin());
  return out;
}

std::vector<tagged_word> tagged_words(const std::string& line) {
  std::vector<tagged_word> out;
  std::istringstream tokens{line};
  for (std::string token; tokens >> token;) {
    auto slash = token.rfind('/');
    bool tagged = slash != std::string::npos && slash > 0;
    tagged_word w{tagged ? token.substr(0, slash) : token, tagged ? token.substr(slash + 1) : ""};
    for (auto& ch : w.word)
      ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    out.push_back(std::move(w));
  }
  return out;
}

} // namespace darcy::stores
