// The jobs of a distributed Estimator, by name: what every role process and every `darcy node`
// builds the same way from a job's name and its options as JSON (the model factory, each
// worker's training input, the evaluation and the run config), so that a job runs anywhere in
// the cluster. An app supplies its catalog of jobs; this file runs them as training workers.
//
//   job_catalog jobs{{"fashion-mnist", {check_fashion_options, make_fashion_job}}};
//   auto job = make_job(jobs, "fashion-mnist", {{"train_examples", 6000}});
//   actors::add_training_worker_type(cfg, training_jobs_of(catalog_ptr));
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "actors/estimator/training_worker.hpp"
#include "ops/estimator/distributed/train_and_evaluate.hpp"

namespace darcy::ops::estimator {

/// The service name under which a job's chief publishes its embedding service.
inline constexpr const char* job_embedding_service = "estimator.embeddings";

/// How long a role's request to a parameter server or an embedding shard waits before it is
/// sent again: a message lost on the way costs this long, not the whole request timeout. Far
/// above a server's answer time on a loaded machine (milliseconds).
inline constexpr std::chrono::milliseconds ps_attempt_timeout{200};

struct estimator_job {
  /// A fresh model function per role. A job with `uses_embeddings` needs a session on the
  /// job's embedding service, which must outlive the model function; others get nullptr.
  std::function<caf::expected<model_fn>(session* embeddings)> model;
  /// The model has dynamic embeddings: the chief starts the service on the ps nodes and
  /// publishes it as job_embedding_service, workers use it, the evaluator restores its own.
  bool uses_embeddings = false;
  /// Worker i's training input, repeating forever (workers stop at the global step).
  std::function<input_fn(size_t worker)> train_input;
  /// Where a worker's input starts when it joins at global step s > 0 (input_pipeline::seek):
  /// a stream's position after the rows the job trained by then. Empty: at its start.
  std::function<std::string(uint64_t global_step)> worker_position;
  /// The trainer's look-ahead over tables larger than memory: a worker reads
  /// `look_ahead_batches` batches ahead of its steps (estimator::prefetch) and calls this with
  /// each batch queued behind another, after `model` has built the worker's model, so that the
  /// shards bring the batch's rows into memory before its step (estimator::prefetch_rows).
  /// Empty, or 0 batches: none.
  std::function<void(const batch&)> look_ahead;
  size_t look_ahead_batches = 0;
  eval_spec eval;
  /// model_dir is the caller's to set.
  run_config config;
};

/// One job of a catalog. `check` refuses bad options without reading the job's data, so that
/// every role process refuses them before its node starts; `make` builds the job (reading its
/// data) and may assume `check` passed.
struct job_entry {
  std::function<caf::error(const nlohmann::json& options)> check;
  std::function<caf::expected<estimator_job>(const nlohmann::json& options)> make;
};

using job_catalog = std::map<std::string, job_entry>;

/// errc::invalid_config for options that are not a JSON object, for an unknown job (naming the
/// catalog's jobs), or what the job's check says.
caf::error check_job_options(const job_catalog& jobs, const std::string& name,
                             const nlohmann::json& options);

/// The job `name` with `options`, checked first.
caf::expected<estimator_job> make_job(const job_catalog& jobs, const std::string& name,
                                      const nlohmann::json& options);

/// The training jobs a node registers (actors::add_training_worker_type): for every job of
/// `jobs`, build the job from the worker_config and train as a non-chief worker against its
/// parameter servers, printing one JSON line of where its steps went.
std::shared_ptr<const actors::training_jobs> training_jobs_of(
  std::shared_ptr<const job_catalog> jobs);

} // namespace darcy::ops::estimator
