// The Estimator jobs that the distributed roles run, by name, each built from its options as
// JSON: the model factory, each worker's training input, the evaluation and the run config.
// Every role process and every `darcy node` builds them the same way, so a job needs nothing
// but its name and options to run anywhere in the cluster.
//
//   auto job = make_estimator_job("fashion-mnist", {{"train_examples", 6000}});
//   auto fn = job->model();                            // a fresh model function per role
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "actors/estimator/training_worker.hpp"
#include "ops/estimator/train_and_evaluate.hpp"

namespace darcy::apps {

/// The service name under which a job's chief publishes its embedding service.
inline constexpr const char* job_embedding_service = "estimator.embeddings";

/// How long a role's parameter-server request waits before it is sent again: a message lost
/// on the way costs this long, not the whole request timeout. Far above a server's answer
/// time on a loaded machine (milliseconds).
inline constexpr std::chrono::milliseconds ps_attempt_timeout{200};

struct estimator_job {
  /// A fresh model function per role. A job with `uses_embeddings` needs a session on the
  /// job's embedding service, which must outlive the model function; others get nullptr.
  std::function<caf::expected<ops::estimator::model_fn>(ops::session* embeddings)> model;
  /// The model has dynamic embeddings: the chief starts the service on the ps nodes and
  /// publishes it as job_embedding_service, workers use it, the evaluator restores its own.
  bool uses_embeddings = false;
  /// Worker i's training input, repeating forever (workers stop at the global step).
  std::function<ops::estimator::input_fn(size_t worker)> train_input;
  ops::estimator::eval_spec eval;
  /// model_dir is the caller's to set.
  ops::estimator::run_config config;
};

/// The job `name` with `options`. "fashion-mnist" takes data (the IDX directory), batch,
/// hidden (a list), learning_rate, threads, seed; "brown-genre" the fields of
/// brown_genre_job_options. Both take train_examples / eval_examples (0: all) to train and
/// evaluate on the first examples only. errc::invalid_config for an unknown job
/// or a bad option; the data's own errors when it cannot be read.
caf::expected<estimator_job> make_estimator_job(const std::string& name,
                                                const nlohmann::json& options);

/// The option errors of make_estimator_job(name, options), without reading the job's data:
/// every role process checks its options before its node starts, so that a bad one is refused
/// at once and not only by the chief.
caf::error check_estimator_job_options(const std::string& name, const nlohmann::json& options);

/// The training jobs a node registers (add_training_worker_type): each builds its estimator
/// job from the worker_config and trains as a non-chief worker against its parameter servers.
std::shared_ptr<const actors::training_jobs> estimator_training_jobs();

} // namespace darcy::apps
