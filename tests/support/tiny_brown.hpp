// A tiny corpus in the Brown format (cats.txt plus one tagged file per document) for the MoE
// language model's tests: 40 documents, each two sentences over a four-word vocabulary with
// a learnable pattern (every "a" is followed by "b"), and one rare word in document 3.
#pragma once

#include <fstream>
#include <string>

namespace darcy::test {

inline void write_tiny_brown(const std::string& dir) {
  std::ofstream cats{dir + "/cats.txt"};
  for (int d = 0; d < 40; ++d) {
    auto name = "doc" + std::to_string(d);
    cats << name << " news\n";
    std::ofstream f{dir + "/" + name};
    for (int s = 0; s < 2; ++s) {
      for (int i = 0; i < 12; ++i)
        f << (i % 3 == 0 ? "a/at " : i % 3 == 1 ? "b/nn " : (d + i) % 2 ? "c/vb " : "d/vb ");
      f << (d == 3 && s == 0 ? "rare/nn " : "") << "./.\n";
    }
  }
}

} // namespace darcy::test
