// The Estimator jobs of `darcy estimator` that run as distributed roles, by name: Fashion-MNIST's
// DNN, brown-genre's Wide & Deep and ctr's DLRM or Wide & Deep (on files, or on a stream), each
// built from its options as JSON. Every role process and every `darcy node` uses this catalog
// (ops/estimator/distributed/distributed_job.hpp runs it).
//
//   auto jobs = estimator_jobs();
//   auto job = ops::estimator::make_job(*jobs, "fashion-mnist", {{"train_examples", 6000}});
#pragma once

#include <memory>

#include "apps/estimator/ctr.hpp"
#include "ops/estimator/distributed/distributed_job.hpp"

namespace darcy::estimator_apps {

/// "ctr" takes the fields of ctr_job_options (an eval file is needed) and reads the
/// training file's rows r % workers == w in worker w. "fashion-mnist" takes data (the IDX
/// directory), batch, hidden (a list), learning_rate, threads, seed; "brown-genre" the fields of
/// brown_genre_job_options. Both take train_examples / eval_examples (0: all) to train and evaluate
/// on the first examples only. A job's check refuses a bad option with errc::invalid_config; its
/// make fails with the data's own errors when the data cannot be read.
/// "ctr-stream" takes ctr's fields and "stream" (ctr_stream_job_options): worker w of n trains
/// rows r % n == w of the generator or of a file that grows, until the global step; it has no
/// evaluator. (The chief's syncs are the caller's: run_role's on_step.)
std::shared_ptr<const ops::estimator::job_catalog> estimator_jobs();

/// The options of job "ctr-stream": o's (ctr_job_options) and run's source and stream.
nlohmann::json ctr_stream_job_options(const ctr_options& o, const ctr_stream_run& run);

} // namespace darcy::estimator_apps
