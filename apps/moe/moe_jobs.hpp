// The jobs behind `darcy moe`: `train` runs a MoE layer with supervised expert actors on a
// cluster (or in process) through ops::train_moe, with a progress bar, and prints a JSON line
// of its figures. Each returns the first error.
#pragma once

#include <string>

#include <caf/error.hpp>

#include "ops/moe_train.hpp"

namespace darcy::moe {

struct train_job {
  ops::moe_train_options options;
  /// Empty: an in-process cluster. Otherwise the seed's HOST:PORT.
  std::string cluster;
  int64_t timeout_ms = 5000;
  /// options.expert_retry, in milliseconds.
  int64_t expert_retry_ms = 1000;
  bool quiet = false;
};

caf::error run_train(const train_job& job);

} // namespace darcy::moe
