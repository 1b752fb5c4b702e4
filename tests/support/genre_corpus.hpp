// A small corpus in the Brown format (cats.txt plus one tagged file per document) for the
// brown-genre Estimator: 40 documents in two categories whose words differ ("vote" and
// "senate" in news, "ghost" and "night" in fiction, "the" in both), so that a model can learn
// the genre from a passage.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace darcy::test {

/// Writes the corpus under `dir` (created): each document has `sentences` sentences of 10
/// words.
inline void write_genre_corpus(const std::string& dir, int sentences) {
  std::filesystem::create_directories(dir);
  std::ofstream cats{dir + "/cats.txt"};
  for (int d = 0; d < 40; ++d) {
    bool news = d % 2 == 0;
    auto name = "doc" + std::to_string(d);
    cats << name << (news ? " news\n" : " fiction\n");
    std::ofstream f{dir + "/" + name};
    for (int s = 0; s < sentences; ++s) {
      for (int i = 0; i < 10; ++i)
        f << (i % 3 == 0 ? "the/at "
              : news     ? (i % 2 ? "Vote/nn " : "senate/nn ")
                         : (i % 2 ? "ghost/nn " : "night/nn "));
      f << "\n\n";
    }
  }
}

} // namespace darcy::test
