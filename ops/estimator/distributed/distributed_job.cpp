#include "ops/estimator/distributed/distributed_job.hpp"

#include <iostream>

#include "messages/error.hpp"
#include "ops/estimator/hooks.hpp"
#include "ops/estimator/parameter_servers.hpp"

namespace darcy::ops::estimator {

namespace {

caf::error train_as_worker(const job_catalog& jobs, caf::actor_system& sys,
                           const worker_config& cfg, const std::atomic<bool>& stop) {
  auto options = nlohmann::json::parse(cfg.options, nullptr, false);
  if (options.is_discarded())
    return make_error(errc::invalid_config,
                      "worker " + std::to_string(cfg.index) + ": the job's options are not JSON");
  auto job = make_job(jobs, cfg.job, options);
  if (!job)
    return std::move(job.error());
  std::unique_ptr<session> embeddings;
  if (job->uses_embeddings) {
    // Lookups and backward passes go straight to the shards on the ps nodes: the chief's
    // master would add a hop each way, and its checkpoints are asynchronous ones anyway (the
    // dense variables are read from the servers while the workers train).
    auto s = session::attach(sys, {.shard_retry = ps_attempt_timeout,
                                   .embedding_service = job_embedding_service,
                                   .direct_shards = true});
    if (!s)
      return std::move(s.error());
    embeddings = std::move(*s);
  }
  auto fn = job->model(embeddings.get());
  if (!fn)
    return std::move(fn.error());
  if (cfg.servers.empty())
    return make_error(errc::invalid_config,
                      "worker " + std::to_string(cfg.index) + ": no parameter servers");
  parameter_servers servers{sys, cfg.servers, std::chrono::seconds(10), ps_attempt_timeout};
  auto run = job->config;
  run.servers = &servers;
  run.chief = false;
  estimator e{*fn, run};
  auto input = job->train_input(cfg.index);
  if (job->worker_position) {
    auto step = servers.global_step();
    if (!step)
      return std::move(step.error());
    if (*step > 0) {
      auto position = job->worker_position(*step);
      std::cerr << "worker " << cfg.index << ": joined at global step " << *step
                << ", its input from position " << position << std::endl;
      input = [input, position]() {
        auto p = input();
        if (p)
          if (auto err = (*p)->seek(position))
            return caf::expected<std::unique_ptr<input_pipeline>>{std::move(err)};
        return p;
      };
    }
  }
  if (job->look_ahead && job->look_ahead_batches > 0)
    input = [input, depth = job->look_ahead_batches, on_read = job->look_ahead]() {
      auto p = input();
      if (!p)
        return p;
      return caf::expected<std::unique_ptr<input_pipeline>>{
        prefetch(std::move(*p), depth, on_read)};
    };
  auto r = e.train(input, cfg.max_steps,
                   {std::make_shared<nan_guard>(), std::make_shared<stop_on_flag>(stop)});
  if (!r)
    return std::move(r.error());
  if (!stop && r->global_step < cfg.max_steps)
    return make_error(errc::invalid_config,
                      "worker " + std::to_string(cfg.index) + ": its input ended at global step " +
                        std::to_string(r->global_step) + ", before the job's " +
                        std::to_string(cfg.max_steps));
  // Where this worker's steps went, for `darcy-bench estimator` and for people reading logs.
  nlohmann::json step_ms;
  for (auto& [phase, seconds] : r->phase_seconds)
    step_ms[phase] = r->steps > 0 ? 1000 * seconds / double(r->steps) : 0.0;
  std::cout << nlohmann::json{{"role", "worker"},
                              {"task_index", cfg.index},
                              {"steps", r->steps},
                              {"step_ms", step_ms}}
                 .dump()
            << std::endl;
  return {};
}

} // namespace

caf::error check_job_options(const job_catalog& jobs, const std::string& name,
                             const nlohmann::json& options) {
  if (!options.is_object())
    return make_error(errc::invalid_config, "estimator job options must be a JSON object");
  auto entry = jobs.find(name);
  if (entry == jobs.end()) {
    std::string names;
    for (auto& [known, _] : jobs)
      names += (names.empty() ? "" : ", ") + known;
    return make_error(errc::invalid_config, "unknown estimator job '" + name + "' (" + names + ")");
  }
  return entry->second.check(options);
}

caf::expected<estimator_job> make_job(const job_catalog& jobs, const std::string& name,
                                      const nlohmann::json& options) {
  if (auto err = check_job_options(jobs, name, options))
    return err;
  return jobs.at(name).make(options);
}

std::shared_ptr<const actors::training_jobs> training_jobs_of(
  std::shared_ptr<const job_catalog> jobs) {
  auto out = std::make_shared<actors::training_jobs>();
  for (auto& [name, _] : *jobs)
    (*out)[name] = [jobs](caf::actor_system& sys, const worker_config& cfg,
                          const std::atomic<bool>& stop) {
      return train_as_worker(*jobs, sys, cfg, stop);
    };
  return out;
}

} // namespace darcy::ops::estimator
