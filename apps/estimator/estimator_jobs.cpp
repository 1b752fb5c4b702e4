#include "apps/estimator/estimator_jobs.hpp"

#include "apps/estimator/brown_genre.hpp"
#include "apps/estimator/fashion_mnist.hpp"
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

caf::expected<estimator_job> fashion_mnist_job(const nlohmann::json& options) {
  fashion_mnist_options o;
  size_t train_examples = 0, eval_examples = 0;
  try {
    o.data_dir = options.value("data", o.data_dir);
    o.batch = options.value("batch", o.batch);
    o.hidden_units = options.value("hidden", o.hidden_units);
    o.learning_rate = options.value("learning_rate", o.learning_rate);
    o.threads = options.value("threads", o.threads);
    o.seed = options.value("seed", o.seed);
    train_examples = options.value("train_examples", size_t{0});
    eval_examples = options.value("eval_examples", size_t{0});
  } catch (const nlohmann::json::exception& e) {
    return make_error(errc::invalid_config, std::string{"fashion-mnist job options: "} + e.what());
  }
  if (o.batch == 0 || o.threads == 0)
    return make_error(errc::invalid_config, "fashion-mnist job options: batch and threads must be > 0");
  auto data = load_fashion_mnist(o.data_dir);
  if (!data)
    return std::move(data.error());
  auto train = first_examples(data->train, train_examples);
  auto test = first_examples(data->test, eval_examples);
  estimator_job job;
  job.model = [o](ops::session*) { return fashion_mnist_model(o); };
  job.train_input = [train, o](size_t worker) -> est::input_fn {
    // Each worker shuffles the data in its own order.
    return [train, o, worker] {
      return est::make_dataset(train, {.batch_size = o.batch, .epochs = 0, .seed = o.seed + worker});
    };
  };
  job.eval = {.input = [test] { return est::make_dataset(test, {.batch_size = 1000, .shuffle = false}); },
              .metric = "accuracy",
              .higher_is_better = true};
  job.config = {.seed = o.seed, .threads = o.threads,
                .optimizer = {.learning_rate = o.learning_rate}};
  return job;
}

caf::expected<estimator_job> brown_genre_job(const nlohmann::json& options) {
  auto o = parse_brown_genre_options(options);
  if (!o)
    return std::move(o.error());
  size_t train_examples = 0, eval_examples = 0;
  try {
    train_examples = options.value("train_examples", size_t{0});
    eval_examples = options.value("eval_examples", size_t{0});
  } catch (const nlohmann::json::exception& e) {
    return make_error(errc::invalid_config, std::string{"brown-genre job options: "} + e.what());
  }
  auto data = load_brown_genres(o->corpus, o->passage_words);
  if (!data)
    return std::move(data.error());
  auto train = first_examples(data->train, train_examples);
  auto test = first_examples(data->test, eval_examples);
  auto classes = data->categories.size();
  estimator_job job;
  job.uses_embeddings = true;
  job.model = [o = *o, classes](ops::session* s) -> caf::expected<est::model_fn> {
    if (!s)
      return make_error(errc::invalid_config, "brown-genre: the model needs an embedding session");
    return brown_genre_model(o, classes, *s);
  };
  job.train_input = [train, o = *o](size_t worker) -> est::input_fn {
    return [train, o, worker] {
      return est::make_dataset(train, {.batch_size = o.batch, .epochs = 0, .seed = o.seed + worker});
    };
  };
  job.eval = {.input = [test] { return est::make_dataset(test, {.batch_size = 100, .shuffle = false}); },
              .metric = "accuracy",
              .higher_is_better = true};
  job.config = {.seed = o->seed, .threads = o->threads,
                .optimizer = {.learning_rate = o->learning_rate}};
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
    auto s = ops::session::attach(sys, {.embedding_service = job_embedding_service});
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
  est::parameter_servers servers{sys, cfg.servers, std::chrono::seconds(10)};
  auto run = job->config;
  run.servers = &servers;
  run.chief = false;
  est::estimator e{*fn, run};
  auto r = e.train(job->train_input(cfg.index), cfg.max_steps,
                   {std::make_shared<est::nan_guard>(), std::make_shared<est::stop_on_flag>(stop)});
  return r ? caf::error{} : std::move(r.error());
}

} // namespace

caf::expected<estimator_job> make_estimator_job(const std::string& name,
                                                const nlohmann::json& options) {
  if (!options.is_object())
    return make_error(errc::invalid_config, "estimator job options must be a JSON object");
  if (name == "fashion-mnist")
    return fashion_mnist_job(options);
  if (name == "brown-genre")
    return brown_genre_job(options);
  return make_error(errc::invalid_config,
                    "unknown estimator job '" + name + "' (fashion-mnist, brown-genre)");
}

std::shared_ptr<const actors::training_jobs> estimator_training_jobs() {
  auto jobs = std::make_shared<actors::training_jobs>();
  (*jobs)["fashion-mnist"] = train_as_worker;
  (*jobs)["brown-genre"] = train_as_worker;
  return jobs;
}

} // namespace darcy::apps
