// `darcy estimator fashion-mnist`: the canned DNN classifier (784-256-128-10, ReLU, Adam,
// batch 128) on Fashion-MNIST from the dataset-fashion-mnist package, trained for a number
// of epochs and evaluated on the test set. Also the training step that `darcy-bench
// estimator` times.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "ops/estimator/estimator.hpp"

namespace darcy::estimator_apps {

struct fashion_mnist_options {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  uint32_t epochs = 15;
  size_t batch = 128;
  /// Empty: the linear baseline, a softmax regression on the pixels.
  std::vector<uint32_t> hidden_units = {256, 128};
  double learning_rate = 1e-3;
  size_t threads = 2;
  uint64_t seed = 1;
  /// Checkpoints (and resume) when set.
  std::string model_dir;
  /// A summary_writer's JSONL file (every 100 steps), when set.
  std::string summary;
  bool quiet = false;
};

struct fashion_mnist_data {
  std::shared_ptr<ops::estimator::example_table> train, test;
};

/// The four IDX files of `dir`. errc::not_found names the missing file and the package.
caf::expected<fashion_mnist_data> load_fashion_mnist(const std::string& dir);

struct fashion_mnist_result {
  double test_accuracy = 0;
  double test_loss = 0;
  uint64_t steps = 0;
  double seconds = 0;
  double steps_per_second = 0;
};

/// The DNN classifier's model function for 784 pixels and 10 classes; with no hidden units,
/// the linear classifier.
caf::expected<ops::estimator::model_fn> fashion_mnist_model(const fashion_mnist_options& o);

/// Trains for o.epochs epochs and evaluates on the test set.
caf::expected<fashion_mnist_result> run_fashion_mnist(const fashion_mnist_options& o,
                                                      const fashion_mnist_data& data);

} // namespace darcy::estimator_apps
