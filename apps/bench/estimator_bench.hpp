// `darcy-bench estimator`: the Fashion-MNIST DNN (784-256-128-10, ReLU, Adam, batch 128) as
// the Estimator trains it, in steps per second, against the same MLP trained plainly in
// PyTorch (python3-torch) on the same threads in the same run (`dnn_vs_torch`); then the
// documented training run's test accuracy (`test_accuracy`); then the brown-genre Wide & Deep
// job as processes with one ps and 1, then 2 workers (`scaling_2_workers`, estimator_scaling),
// or any ascending worker counts from 1 and any number of ps tasks.
// Last line: {"bench":"estimator","metrics":{...}}.
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace darcy::apps {

struct estimator_bench_options {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  /// Timed passes over the training set for steps/s, each side; the median counts.
  uint32_t repeats = 3;
  /// Epochs of the accuracy run (the documented setting); 0 skips it.
  uint32_t epochs = 15;
  size_t threads = 2;
  bool peer = true;
  std::string python = "/usr/bin/python3";
  std::string corpus = "build/data/brown";
  /// Global steps of each scaling run; 0 skips them.
  uint64_t scaling_steps = 3000;
  /// Runs of each worker count, alternated; the median counts.
  uint32_t scaling_repeats = 3;
  /// Worker counts of the scaling runs: ascending, from 1, each rate's ratio to the first.
  std::vector<size_t> scaling_workers = {1, 2};
  /// ps tasks of every scaling run.
  size_t scaling_ps = 1;
};

caf::error run_estimator_bench(const estimator_bench_options& o);

} // namespace darcy::apps
