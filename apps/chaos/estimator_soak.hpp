// The Estimator's part of `darcy-bench soak`. Its roles are processes of their own (the chief
// is the seed; a ps, the workers and an evaluator join it from their cluster spec), so this
// soak starts them itself instead of using a `cluster up` cluster. The killer SIGKILLs the ps
// or worker processes and starts each again once the chief has seen it down.
#pragma once

#include <string>

#include <caf/expected.hpp>

#include "apps/chaos/soak.hpp"

namespace darcy::apps {

/// Where the Estimator soak's Fashion-MNIST comes from (the dataset-fashion-mnist package).
inline constexpr const char* soak_fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";

/// The Estimator soak (o.job "estimator": Fashion-MNIST's DNN; "ctr": a small DLRM on
/// generated click data, its tables on the ps node's embedding shards) trained asynchronously
/// by a chief, one ps and o.nodes - 2 workers, with an evaluator whose mean accuracy (AUC) over
/// the checkpoints of the last 500 global steps is the quality. The ps and the workers are
/// killed; the chief loads a ps started again from the last checkpoint, embedding shards
/// included. errc::invalid_config for fewer than 4 nodes or no Fashion-MNIST; errc::io_error
/// when the clean run fails.
caf::expected<soak_result> run_estimator_soak(const soak_options& o, const std::string& binary);

} // namespace darcy::apps
