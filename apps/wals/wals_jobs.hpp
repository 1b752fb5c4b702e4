// The jobs behind `darcy wals train | eval | recommend`: train through ops::train_wals with a
// progress bar and write the model, hold out 20% and score WALS against popularity, and
// recommend for a known user or project a new one. Each returns the first error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "compute/ranking.hpp"
#include "ops/wals_train.hpp"

namespace darcy::wals {

struct train_job {
  ops::wals_train_options options;
  /// Empty: an in-process cluster. Otherwise the seed's HOST:PORT.
  std::string cluster;
  int64_t timeout_ms = 10000;
  /// Model directory (empty: do not write one). Checkpoints go to OUT/checkpoints unless
  /// options.checkpoint_dir is set.
  std::string out;
  bool quiet = false;
};

struct trained {
  std::shared_ptr<const stores::wals_dataset> data;
  ops::wals_result result;
  double load_seconds = 0;
  double train_seconds = 0;
};

/// Loads the data, trains (printing progress unless quiet) and writes the model when job.out
/// is set.
caf::expected<trained> train(const train_job& job);

caf::error run_train(const train_job& job);

struct eval_figures {
  compute::ranking_metrics wals;
  compute::ranking_metrics popularity;
  double train_seconds = 0;
};

/// Trains on the data minus a seeded hold-out (options.data.holdout, 0.2 when unset) and scores
/// both WALS and popularity on the held-out entries.
caf::expected<eval_figures> evaluate(train_job job, uint32_t k);

struct eval_job {
  train_job train;
  uint32_t k = 10;
  bool json = false;
};

caf::error run_eval(const eval_job& job);

struct recommend_job {
  std::string model;
  /// A known row id, or (cold start) columns the new row has, with optional values.
  std::string user;
  std::vector<std::string> items;
  std::vector<float> values;
  uint32_t k = 10;
  /// Optional "id<TAB>name" file (Last.fm's artists.dat) for display.
  std::string names;
};

caf::error run_recommend(const recommend_job& job);

} // namespace darcy::wals
