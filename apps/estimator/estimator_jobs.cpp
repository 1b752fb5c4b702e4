#include "apps/estimator/estimator_jobs.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/estimator/brown_genre.hpp"
#include "apps/estimator/ctr.hpp"
#include "apps/estimator/fashion_mnist.hpp"
#include "compute/nn/optimizers.hpp"
#include "messages/error.hpp"
#include "ops/ctr/ctr_input.hpp"
#include "ops/ctr/ctr_stream_input.hpp"
#include "ops/estimator/dynamic_embedding_column.hpp"

namespace darcy::estimator_apps {

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
caf::expected<est::estimator_job> classifier_job(const std::string& name,
                                                 const nlohmann::json& options,
                                                 std::shared_ptr<est::example_table> train,
                                                 std::shared_ptr<est::example_table> test,
                                                 size_t batch, size_t eval_batch, uint64_t seed,
                                                 size_t threads, double learning_rate) {
  try {
    train = first_examples(train, options.value("train_examples", size_t{0}));
    test = first_examples(test, options.value("eval_examples", size_t{0}));
  } catch (const nlohmann::json::exception& e) {
    return make_error(errc::invalid_config, name + " job options: " + e.what());
  }
  est::estimator_job job;
  job.train_input = [train, batch, seed](size_t worker) -> est::input_fn {
    return [train, batch, seed, worker] {
      return est::make_dataset(train, {.batch_size = batch, .epochs = 0, .seed = seed + worker});
    };
  };
  job.eval = {.input =
                [test, eval_batch] {
                  return est::make_dataset(test, {.batch_size = eval_batch, .shuffle = false});
                },
              .metric = "accuracy",
              .higher_is_better = true};
  job.config = {.seed = seed,
                .threads = threads,
                .optimizer = compute::adam_optimizer(static_cast<float>(learning_rate))};
  return job;
}

caf::error check_learning_rate(const std::string& job, double learning_rate) {
  if (auto err = compute::validate(compute::adam_optimizer(static_cast<float>(learning_rate))))
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
    return make_error(errc::invalid_config,
                      "fashion-mnist job options: batch and threads must be > 0");
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

caf::expected<est::estimator_job> fashion_mnist_job(const nlohmann::json& options) {
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

caf::expected<est::estimator_job> brown_genre_job(const nlohmann::json& options) {
  auto o = brown_genre_options_of(options);
  if (!o)
    return std::move(o.error());
  auto data = load_brown_genres(o->corpus, o->passage_words);
  if (!data)
    return std::move(data.error());
  auto job = classifier_job("brown-genre", options, data->train, data->test, o->batch, 100, o->seed,
                            o->threads, o->learning_rate);
  if (!job)
    return job;
  job->uses_embeddings = true;
  job->model =
    [o = *o, classes = data->categories.size()](ops::session* s) -> caf::expected<est::model_fn> {
    if (!s)
      return make_error(errc::invalid_config, "brown-genre: the model needs an embedding session");
    return brown_genre_model(o, classes, *s);
  };
  return job;
}

caf::expected<ctr_options> ctr_options_of(const nlohmann::json& options) {
  auto o = parse_ctr_options(options);
  if (!o)
    return o;
  try {
    if (auto n = options.value("train_examples", uint64_t{0}); n > 0)
      o->train_rows = n;
    if (auto n = options.value("eval_examples", uint64_t{0}); n > 0)
      o->eval_rows = n;
  } catch (const nlohmann::json::exception& e) {
    return make_error(errc::invalid_config, std::string{"ctr job options: "} + e.what());
  }
  return o;
}

/// What both ctr jobs share: the model on the job's embedding service, its seed, threads and
/// dense optimizer, and with o.prefetch_batches a worker's look-ahead over the tables of the
/// model it built last.
est::estimator_job ctr_job_base(const ctr_options& o) {
  est::estimator_job job;
  job.uses_embeddings = true;
  job.config = {.seed = o.seed, .threads = o.threads, .optimizer = o.dense_optimizer};
  auto columns = std::make_shared<std::vector<compute::estimator::dense_ptr<float>>>();
  job.model = [o, columns](ops::session* s) -> caf::expected<est::model_fn> {
    if (!s)
      return make_error(errc::invalid_config, "ctr: the model needs an embedding session");
    columns->clear();
    return ctr_model(o, *s, columns.get());
  };
  // A failed look-ahead leaves the rows where they are: the step's lookup meets the error.
  job.look_ahead = [columns](const est::batch& b) {
    for (auto& column : *columns)
      (void)est::prefetch_rows(column, b.features);
  };
  job.look_ahead_batches = o.prefetch_batches;
  return job;
}

/// Worker w of n reads rows r with r % n == w of the training file, over and over; the
/// evaluation reads the test file once.
caf::expected<est::estimator_job> ctr_job(const nlohmann::json& options) {
  auto o = ctr_options_of(options);
  if (!o)
    return std::move(o.error());
  if (o->eval.empty())
    return make_error(errc::invalid_config,
                      "ctr job options: a distributed job needs an eval file");
  auto workers = std::max<uint32_t>(1, options.value("workers", uint32_t{1}));
  auto job = ctr_job_base(*o);
  job.train_input = [o = *o, workers](size_t worker) {
    return ops::ctr::ctr_file_input(o.train, {.batch_size = o.batch,
                                              .epochs = 0,
                                              .max_rows = o.train_rows,
                                              .shard = static_cast<uint32_t>(worker % workers),
                                              .shards = workers,
                                              .skip_malformed = o.skip_malformed});
  };
  job.eval = {
    .input = ops::ctr::ctr_file_input(
      o->eval, {.batch_size = 1000, .max_rows = o->eval_rows, .skip_malformed = o->skip_malformed}),
    .metric = "auc_roc",
    .higher_is_better = true};
  return job;
}

/// The stream of a "ctr-stream" job's options, with o's seed and skip_malformed.
caf::expected<std::pair<std::string, ops::ctr::ctr_stream_options>> stream_of(
  const nlohmann::json& options, const ctr_options& o) {
  auto bad = [](const std::string& what) {
    return make_error(errc::invalid_config, "ctr-stream job options: " + what);
  };
  if (!options.contains("stream") || !options["stream"].is_object())
    return bad("no \"stream\" object");
  auto& j = options["stream"];
  ops::ctr::ctr_stream_options s;
  std::string source;
  try {
    source = j.at("source").get<std::string>();
    s.drift_rows = j.value("drift_rows", s.drift_rows);
    s.generator.fresh_rate = j.value("fresh_rate", s.generator.fresh_rate);
    s.fresh_step = j.value("fresh_step", s.fresh_step);
    s.rows = j.value("rows", s.rows);
    s.generator.max_ids = j.value("max_ids", s.generator.max_ids);
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
  if (source == "-")
    return bad("a distributed stream reads the generator or a file, not standard input");
  s.generator.seed = o.seed;
  s.skip_malformed = o.skip_malformed;
  return std::pair{std::move(source), s};
}

/// Worker w of n trains rows r % n == w of the stream until the global step; the chief writes
/// the syncs (run_role's on_step). It has no evaluator: a stream's rows are scored as they come.
/// A worker that joins at global step s starts after the stream's first s × batch rows, the
/// rows the job trained by then when its workers keep the same pace (after a resume from a
/// sync, those before it; a worker started again skips the rows of its partition that went
/// by while it was down).
caf::expected<est::estimator_job> ctr_stream_job(const nlohmann::json& options) {
  auto o = ctr_options_of(options);
  if (!o)
    return std::move(o.error());
  auto stream = stream_of(options, *o);
  if (!stream)
    return std::move(stream.error());
  auto workers = std::max<uint32_t>(1, options.value("workers", uint32_t{1}));
  auto job = ctr_job_base(*o);
  job.train_input = [o = *o, stream = *stream, workers](size_t worker) {
    return ops::ctr::ctr_stream_input(
      stream.first, stream.second,
      {.batch_size = o.batch, .shard = static_cast<uint32_t>(worker % workers), .shards = workers});
  };
  job.worker_position = [batch = o->batch, rows = stream->second.rows](uint64_t step) {
    auto position = step * batch;
    return std::to_string(rows > 0 ? std::min(position, rows) : position);
  };
  job.eval = {.input = []() -> caf::expected<std::unique_ptr<est::input_pipeline>> {
                return make_error(errc::invalid_config,
                                  "ctr-stream: a stream job has no evaluator");
              },
              .metric = "auc_roc",
              .higher_is_better = true};
  return job;
}

} // namespace

nlohmann::json ctr_stream_job_options(const ctr_options& o, const ctr_stream_run& run) {
  auto j = ctr_job_options(o);
  j["stream"] = {{"source", run.source},
                 {"drift_rows", run.stream.drift_rows},
                 {"fresh_rate", run.stream.generator.fresh_rate},
                 {"fresh_step", run.stream.fresh_step},
                 {"rows", run.stream.rows},
                 {"max_ids", run.stream.generator.max_ids}};
  return j;
}

std::shared_ptr<const est::job_catalog> estimator_jobs() {
  auto refusal = [](auto parsed) -> caf::error {
    return parsed ? caf::error{} : std::move(parsed.error());
  };
  auto jobs = std::make_shared<est::job_catalog>();
  (*jobs)["fashion-mnist"] = {
    [=](const nlohmann::json& o) { return refusal(fashion_mnist_options_of(o)); },
    fashion_mnist_job};
  (*jobs)["brown-genre"] = {
    [=](const nlohmann::json& o) { return refusal(brown_genre_options_of(o)); }, brown_genre_job};
  (*jobs)["ctr"] = {[=](const nlohmann::json& o) { return refusal(ctr_options_of(o)); }, ctr_job};
  (*jobs)["ctr-stream"] = {[=](const nlohmann::json& o) -> caf::error {
                             auto parsed = ctr_options_of(o);
                             if (!parsed)
                               return std::move(parsed.error());
                             return refusal(stream_of(o, *parsed));
                           },
                           ctr_stream_job};
  return jobs;
}

} // namespace darcy::estimator_apps
