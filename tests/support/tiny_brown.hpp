// A tiny corpus in the Brown format (cats.txt plus one tagged file per document) for the MoE
// language model's tests: 40 documents, each two sentences over a four-word vocabulary with
// a learnable pattern (every "a" is followed by "b"), and one rare word in document 3; and
// model options small enough to train on it in milliseconds.
#pragma once

#include <fstream>
#include <string>

#include "apps/moe/lm_model.hpp"

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

/// d = 16, batches of 4 × 5, 4 negatives, one thread; 4 FFN experts (hidden 16) at k = 2 with
/// the batchwise mask.
inline moe::lm_options tiny_lm_options(double learning_rate) {
  moe::lm_options o;
  o.dim = 16;
  o.batch = 4;
  o.unroll = 5;
  o.sampled = 4;
  o.threads = 1;
  o.learning_rate = learning_rate;
  o.embedding_learning_rate = static_cast<float>(learning_rate);
  o.layer.expert = expert_kind::ffn;
  o.layer.hidden = 16;
  o.layer.gating = {.experts = 4, .k = 2, .mask = mask_kind::batchwise, .seed = 2};
  return o;
}

} // namespace darcy::test
