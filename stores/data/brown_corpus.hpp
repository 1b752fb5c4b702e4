// The Brown corpus as the apps read it (the copy `make demo` fetches): its catalog (cats.txt:
// each document's file and category) and its tagged tokens ("word/tag"), words lower-cased.
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

namespace darcy::stores {

struct brown_document {
  /// The document's file, inside the corpus directory.
  std::string path;
  std::string category;
  /// The index of the category in brown_catalog::categories.
  uint32_t label = 0;
};

struct brown_catalog {
  /// Every document, in cats.txt order.
  std::vector<brown_document> documents;
  /// The distinct categories, sorted.
  std::vector<std::string> categories;
};

/// errc::not_found naming cats.txt when the corpus is missing; errc::corrupt_file naming the
/// line when a line that is not blank lacks its category. Blank lines are skipped. Whether
/// each listed document exists is left to whoever reads it.
caf::expected<brown_catalog> read_brown_catalog(const std::string& corpus);

struct tagged_word {
  std::string word;
  std::string tag;
};

/// The tokens of one line of a tagged file: the text before the last '/' lower-cased (the
/// whole token when it has none), and the tag after it.
std::vector<tagged_word> tagged_words(const std::string& line);

} // namespace darcy::stores
