#include "apps/estimator/estimator_jobs.hpp"

#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/estimator/brown_genre.hpp"
#include "apps/estimator/fashion_mnist.hpp"
#include "compute/nn/optimizers.hpp"
#include "messages/error.hpp"

namespace darcy::apps {

namespace est = ops::estimator;

namespace {

/// The first `n` examples of `t` (all of them for 0).
std::shared_ptr<est::example_table> first_examples(std::shared_ptr<est::example_table> t,
                                                   size_t n) {
  if (n == 0 || n >= t->rows())
    return t;
  std::vector<size_t> which(n);
  for (size_t i = 0; i < n; ++i)
    which[i] = i;
  auto b = est::gather(*t, which);
  auto out = std::make_shared<est::example_table>();
  out->features = std::move(b.features);
  out->labels = std::move(b.labels);
  return out;
}

/// What both jobs share: training and evaluation on the first train_examples / eval_examples
/// of `train` and `test` (options; 0: all), each worker shuffling in its own order, accuracy
/// as the metric, and Adam at `learning_rate`.
caf::expected<estimator_job> classifier_job(const std::string& name, const nlohmann::json& options,
                                            std::shared_ptr<est::example_table> train,
                                            std::shared_ptr<est::example_table> test, size_t batch,
                                            size_t eval_batch, uint64_t seed, size_t threads,
                                            double learning_rate) {
  try {
    train = first_examples(train, options.value("train_examples", size_t{0}));
    test = first_examples(test, options.value("eval_examples", size_t{0}));
  } catch (const nlohmann::json::exception& e) {
    return make_error(errc::invalid_config, name + " job options: " + e.what());
  }
  estimator_job job;
  job.train_input = [train, batch, seed](size_t worker) -> est::input_fn {
    return [train, batch, seed, worker] {
      return est::make_dataset(train, {.batch_size = batch, .epochs = 0, .seed = seed + worker});
    };
  };
  job.eval = {.input = [test, eval_batch] {
                return est::make_dataset(test, {.batch_size = eval_batch, .shuffle = false});
              },
              .metric = "accuracy",
              .higher_is_better = true};
  job.config = {.seed = seed, .threads = threads, .optimizer = {.learning_rate = learning_rate}};
  return job;
}

caf::error check_learning_rate(const std::string& job, double learning_rate) {
  if (auto err = compute::nn::validate(compute::nn::adam_config{.learning_rate = learning_rate}))
    return make_error(errc::invalid_config, job + " job options: " + err.context);
  return {};
}

caf::expected<fashion_mnist_options> fashion_mnist_options_of(const nlohmann::json& options) {
  fashion_mnist_options o;
  try {
    o.data_dir = options.value("data", o.data_dir);
    o.batch = options.value("batch", o.batch);
    o.hidden_units = options.value("hidden", o.hidden_units);
    o.learning_rate = options.value("learning_rate", o.learning_rate);
    o.threads = options.value("threads", o.threads);
    o.seed = options.value("seed", o.seed);
  } catch (const nlohmann::json::exception& e) {
    return make_error(errc::invalid_config, std::string{"fashion-mnist job options: "} + e.what());
  }
  if (o.batch == 0 || o.threads == 0)
    return make_error(errc::invalid_config, "fashion-mnist job options: batch and threads must be > 0");
  if (auto err = check_learning_rate("fashion-mnist", o.learning_rate))
    return err;
  return o;
}

caf::expected<brown_genre_options> brown_genre_options_of(const nlohmann::json& options) {
  auto o = parse_brown_genre_options(options);
  if (!o)
    return o;
  if (auto err = check_learning_rate("brown-genre", o->learning_rate))
    return err;
  return o;
}

caf::expected<estimator_job> fashion_mnist_job(const nlohmann::json& options) {
  auto o = fashion_mnist_options_of(options);
  if (!o)
    return std::move(o.error());
  auto data = load_fashion_mnist(o->data_dir);
  if (!data)
    return std::move(data.error());
  auto job = classifier_job("fashion-mnist", options, data->train, data->test, o->batch, 1000,
                            o->seed, o->threads, o->learning_rate);
  if (job)
    job->model = [o = *o](ops::session*) { return fashion_mnist_model(o); };
  return job;
}

caf::expected<estimator_job> brown_genre_job(const nlohmann::json& options) {
  auto o = brown_genre_options_of(options);
  if (!o)
    return std::move(o.error());
  auto data = load_brown_genres(o->corpus, o->passage_words);
  if (!data)
    return std::move(data.error());
  auto job = classifier_job("brown-genre", options, data->train, data->test, o->batch, 100,
                            o->seed, o->threads, o->learning_rate);
  if (!job)
    return job;
  job->uses_embeddings = true;
  job->model = [o = *o, classes = data->categories.size()](ops::session* s) -> caf::expected<est::model_fn> {
    if (!s)
      return make_error(errc::invalid_config, "brown-genre: the model needs an embedding session");
    return brown_genre_model(o, classes, *s);
  };
  return job;
}

caf::error train_as_worker(caf::actor_system& sys, const worker_config& cfg,
                           const std::atomic<bool>& stop) {
  auto options = nlohmann::json::parse(cfg.options, nullptr, false);
  if (options.is_discarded())
    return make_error(errc::invalid_config, "worker " + std::to_string(cfg.index) +
                                              ": the job's options are not JSON");
  auto job = make_estimator_job(cfg.job, options);
  if (!job)
    return std::move(job.error());
  std::unique_ptr<ops::session> embeddings;
  if (job->uses_embeddings) {
    // Lookups and backward passes go straight to the shards on the ps nodes: the chief's
    // master would add a hop each way, and its checkpoints are asynchronous ones anyway (the
    // dense variables are read from the servers while the workers train).
    auto s = ops::session::attach(sys, {.embedding_service = job_embedding_service,
                                        .direct_shards = true});
    if (!s)
      return std::move(s.error());
    embeddings = std::move(*s);
  }
  auto fn = job->model(embeddings.get());
  if (!fn)
    return std::move(fn.error());
  if (cfg.servers.empty())
    return make_error(errc::invalid_config, "worker " + std::to_string(cfg.index) +
                                              ": no parameter servers");
  est::parameter_servers servers{sys, cfg.servers, std::chrono::seconds(10), ps_attempt_timeout};
  auto run = job->config;
  run.servers = &servers;
  run.chief = false;
  est::estimator e{*fn, run};
  auto r = e.train(job->train_input(cfg.index), cfg.max_steps,
                   {std::make_shared<est::nan_guard>(), std::make_shared<est::stop_on_flag>(stop)});
  if (!r)
    return std::move(r.error());
  // Where this worker's steps went, for `darcy bench estimator` and for people reading logs.
  nlohmann::json step_ms;
  for (auto& [phase, seconds] : r->phase_seconds)
    step_ms[phase] = r->steps > 0 ? 1000 * seconds / double(r->steps) : 0.0;
  std::cout << nlohmann::json{{"role", "worker"}, {"task_index", cfg.index},
                              {"steps", r->steps}, {"step_ms", step_ms}}
                 .dump()
            << std::endl;
  return {};
}

} // namespace

caf::error check_estimator_job_options(const std::string& name, const nlohmann::json& options) {
  if (!options.is_object())
    return make_error(errc::invalid_config, "estimator job options must be a JSON object");
  auto refusal = [](auto parsed) -> caf::error {
    return parsed ? caf::error{} : std::move(parsed.error());
  };
  if (name == "fashion-mnist")
    return refusal(fashion_mnist_options_of(options));
  if (name == "brown-genre")
    return refusal(brown_genre_options_of(options));
  return make_error(errc::invalid_config,
                    "unknown estimator job '" + name + "' (fashion-mnist, brown-genre)");
}

caf::expected<estimator_job> make_estimator_job(const std::string& name,
                                                const nlohmann::json& options) {
  if (auto err = check_estimator_job_options(name, options))
    return err;
  return name == "fashion-mnist" ? fashion_mnist_job(options) : brown_genre_job(options);
}

std::shared_ptr<const actors::training_jobs> estimator_training_jobs() {
  auto jobs = std::make_shared<actors::training_jobs>();
  (*jobs)["fashion-mnist"] = train_as_worker;
  (*jobs)["brown-genre"] = train_as_worker;
  return jobs;
}

} // namespace darcy::apps
