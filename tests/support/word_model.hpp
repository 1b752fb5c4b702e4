// A small Estimator model on one dynamic embedding column, for the tests of its column, its
// exports and their serving: two classes, each example's raw word naming its class.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/estimator/canned.hpp"
#include "ops/estimator/dynamic_embedding_column.hpp"
#include "ops/estimator/estimator.hpp"
#include "ops/estimator/input.hpp"

namespace darcy::test {

namespace ce = compute::estimator;

/// Two classes; the raw word of each example names its class ("w0" or "w1"), the numbers are
/// noise.
inline std::shared_ptr<ops::estimator::example_table> words(size_t rows) {
  std::mt19937_64 rng{3};
  std::normal_distribution<double> noise;
  auto t = std::make_shared<ops::estimator::example_table>();
  std::vector<double> x;
  std::vector<std::vector<std::string>> w;
  t->labels = ops::estimator::matrix(rows, 1);
  for (size_t i = 0; i < rows; ++i) {
    x.push_back(noise(rng));
    w.push_back({"w" + std::to_string(i % 2), "common"});
    t->labels(i, 0) = float(i % 2);
  }
  t->features["x"] = ce::feature_value::numeric(x);
  t->features["words"] = ce::feature_value::categorical(w);
  return t;
}

inline de_config word_config() {
  de_config c;
  c.dim = 4;
  c.optimizer.kind = optimizer_kind::adagrad;
  c.optimizer.learning_rate = 0.2f;
  return c;
}

inline ops::estimator::model_fn model(ops::session& s) {
  auto column = ops::estimator::dynamic_embedding_column(s, "words", word_config());
  EXPECT_TRUE(column);
  return *ops::estimator::dnn_model({.columns = {*ce::numeric_column<float>("x"), *column},
                                     .hidden_units = {8},
                                     .head = {.kind = ce::head_kind::binary}});
}

inline ops::estimator::input_fn column_input(std::shared_ptr<ops::estimator::example_table> t,
                                             uint32_t epochs) {
  return [t, epochs] {
    return ops::estimator::make_dataset(t, {.batch_size = 16, .epochs = epochs, .seed = 2});
  };
}

inline ops::estimator::run_config session_config(ops::session& s, const std::string& dir = "") {
  return {.model_dir = dir,
          .seed = 3,
          .threads = 1,
          .optimizer = compute::adam_optimizer(0.01f),
          .embeddings = &s};
}

} // namespace darcy::test
