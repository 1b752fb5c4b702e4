// Test support for the Estimator: a small three-class problem (2-D points with a noisy tag
// word), its input, canned-model options over it, and the variables of an estimator by name.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ops/estimator/canned.hpp"
#include "ops/estimator/estimator.hpp"

namespace darcy::test::estimator_blobs {

using namespace darcy::ops::estimator;
namespace ce = compute::estimator;

/// Three classes of 2-D points around (0, 3), (3, 0) and (−3, −3), each with a tag word that
/// agrees with the class 80% of the time.
inline std::shared_ptr<example_table> blobs(size_t rows, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::normal_distribution<double> noise{0, 0.8};
  std::uniform_real_distribution<double> unit;
  const double cx[] = {0, 3, -3}, cy[] = {3, 0, -3};
  auto t = std::make_shared<example_table>();
  std::vector<double> xy;
  std::vector<std::vector<std::string>> tags;
  t->labels = matrix(rows, 1);
  for (size_t i = 0; i < rows; ++i) {
    auto c = i % 3;
    xy.push_back(cx[c] + noise(rng));
    xy.push_back(cy[c] + noise(rng));
    tags.push_back({"tag" + std::to_string(unit(rng) < 0.8 ? c : (c + 1) % 3)});
    t->labels(i, 0) = float(c);
  }
  t->features["xy"] = ce::feature_value::numeric(xy, 2);
  t->features["tag"] = ce::feature_value::categorical(tags);
  return t;
}

inline input_fn input(std::shared_ptr<example_table> t, uint32_t epochs, uint64_t seed = 1) {
  return [t, epochs, seed] {
    return make_dataset(t, {.batch_size = 32, .epochs = epochs, .seed = seed});
  };
}

inline canned_options blob_options(std::vector<uint32_t> hidden = {16}) {
  auto tag = *ce::categorical_column_with_hash_bucket("tag", 20);
  return {.columns = {*ce::numeric_column<float>("xy", 2), *ce::embedding_column<float>(tag, 4)},
          .hidden_units = std::move(hidden),
          .linear_columns = {*ce::numeric_column<float>("xy", 2), ce::indicator_column<float>(tag)},
          .head = {.kind = ce::head_kind::multi_class, .classes = 3}};
}

/// Every variable's values, by name.
inline std::map<std::string, matrix> values_of(estimator& e) {
  std::map<std::string, matrix> out;
  for (auto* p : e.variables().all())
    out[p->name] = p->value;
  return out;
}

inline run_config config(const std::string& dir = "") {
  return {.model_dir = dir, .seed = 5, .threads = 1, .optimizer = compute::adam_optimizer(0.02f)};
}

} // namespace darcy::test::estimator_blobs
