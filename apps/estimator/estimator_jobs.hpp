// The Estimator jobs of `darcy estimator` that run as distributed roles, by name: Fashion-MNIST's
// DNN, brown-genre's Wide & Deep and ctr's DLRM or Wide & Deep, each built from its options as
// JSON. Every role process and every `darcy node` uses this catalog
// (ops/estimator/distributed/distributed_job.hpp runs it).
//
//   auto jobs = estimator_jobs();
//   auto job = ops::estimator::make_job(*jobs, "fashion-mnist", {{"train_examples", 6000}});
#pragma once

#include <memory>

#include "ops/estimator/distributed/distributed_job.hpp"

namespace darcy::estimator_apps {

/// "ctr" takes the fields of ctr_job_options (an eval file is needed) and reads the
/// training file's rows r % workers == w in worker w. "fashion-mnist" takes data (the IDX
/// directory), batch, hidden (a list), learning_rate, threads, seed; "brown-genre" the fields of
/// brown_genre_job_options. Both take train_examples / eval_examples (0: all) to train and evaluate
/// on the first examples only. A job's check refuses a bad option with errc::invalid_config; its
/// make fails with the data's own errors when the data cannot be read.
std::shared_ptr<const ops::estimator::job_catalog> estimator_jobs();

} // namespace darcy::estimator_apps
