// `darcy estimator fashion-mnist`: the canned DNN classifier on Fashion-MNIST, with its test
// accuracy as a JSON line; with DARCY_CONFIG (or --task-type), this process's role of the
// distributed job instead. `darcy estimator brown-genre`: Wide & Deep on Brown passages, with
// its baselines, locally or as a role the same way. `darcy estimator sparse2label`: keywords
// of Brown passages through the sampled-softmax head, in rounds of growing data.
// `darcy estimator ctr`: DLRM or Wide & Deep on Criteo-format files, locally or as a role.
// `darcy estimator plot`: a summary writer's curve as a PNG.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/cli/commands.hpp"
#include "apps/estimator/brown_genre.hpp"
#include "apps/estimator/ctr.hpp"
#include "apps/estimator/estimator_jobs.hpp"
#include "apps/estimator/fashion_mnist.hpp"
#include "apps/estimator/sparse2label.hpp"
#include "apps/estimator/summary_plot.hpp"
#include "messages/error.hpp"
#include "ops/estimator/distributed/run_role.hpp"
#include "runtime/process/machine.hpp"

namespace darcy::apps {

namespace {

/// Flags of a distributed run; the role comes from DARCY_CONFIG unless --task-type is given.
struct role_flags {
  std::string task_type;
  CLI::Option* task_type_option = nullptr;
  uint32_t task_index = 0;
  std::string cluster_spec;
  uint64_t max_steps = 1000;
  uint64_t save_checkpoints_steps = 200;
  std::string export_dir;
  std::string node_config;
  size_t train_examples = 0;
  size_t eval_examples = 0;
  double ps_rejoin_s = 120;
  /// --task-index and --cluster-spec, which only go with --task-type.
  std::vector<CLI::Option*> with_task_type;
  /// The other flags above: only a distributed role reads them.
  std::vector<CLI::Option*> role_only;
  /// The app's flags that only a local run reads (--epochs: a role trains to --max-steps).
  std::vector<CLI::Option*> local_only;
};

void add_role_flags(CLI::App* cmd, role_flags& r) {
  auto group = "Distributed roles (DARCY_CONFIG or these)";
  auto role_only = [&](CLI::Option* o) { r.role_only.push_back(o->group(group)); };
  r.task_type_option =
    cmd->add_option("--task-type", r.task_type, "chief, worker, ps or evaluator")->group(group);
  r.with_task_type = {
    cmd->add_option("--task-index", r.task_index, "Index among the tasks of its type")
      ->group(group),
    cmd
      ->add_option("--cluster-spec", r.cluster_spec,
                   R"(JSON {"chief": ["H:P"], "ps": [...], "worker": [...], "evaluator": [...]})")
      ->group(group)};
  role_only(cmd->add_option("--max-steps", r.max_steps, "Global step to train to"));
  role_only(cmd
              ->add_option("--save-checkpoints-steps", r.save_checkpoints_steps,
                           "Chief: a checkpoint every N global steps")
              ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40)));
  role_only(
    cmd->add_option("--export-dir", r.export_dir, "Evaluator: export each improvement here"));
  role_only(cmd
              ->add_option("--ps-rejoin-s", r.ps_rejoin_s,
                           "Chief: how long a ps task whose node died may take to join again (it "
                           "is then loaded from the last checkpoint)")
              ->check(CLI::Range(0.0, 86400.0)));
  role_only(cmd->add_option("--node-config", r.node_config,
                            "TOML of the role's node (heartbeats, secret)"));
  role_only(cmd->add_option("--train-examples", r.train_examples,
                            "Train on the first N examples (0: all)"));
  role_only(cmd->add_option("--eval-examples", r.eval_examples,
                            "Evaluate on the first N examples (0: all)"));
}

/// The first of `options` given on the command line, or nullptr.
const CLI::Option* given(const std::vector<CLI::Option*>& options) {
  for (auto* o : options)
    if (o->count() > 0)
      return o;
  return nullptr;
}

/// An error naming the first flag given that this kind of run would ignore: a role-only flag in
/// a local run, --epochs in a role, or --task-index / --cluster-spec where DARCY_CONFIG names
/// the role (they only go with --task-type).
caf::error check_flags_fit_the_run(const role_flags& r, bool distributed) {
  if (!distributed) {
    auto* o = given(r.with_task_type);
    if (!o)
      o = given(r.role_only);
    if (!o)
      return {};
    auto hint = o->get_name() == "--max-steps" ? "; a local run trains for --epochs" : "";
    return make_error(errc::invalid_config, o->get_name() +
                                              " applies to a distributed role only "
                                              "(give --task-type or DARCY_CONFIG)" +
                                              hint);
  }
  if (auto* o = given(r.local_only))
    return make_error(errc::invalid_config, o->get_name() +
                                              " applies to a local run only; a "
                                              "distributed role trains to --max-steps");
  if (auto* o = given(r.with_task_type); o && r.task_type.empty())
    return make_error(errc::invalid_config,
                      o->get_name() + " goes with --task-type; here DARCY_CONFIG names the role");
  return {};
}

/// The role of this process, or nullopt for a local run.
caf::expected<std::optional<ops::estimator::role_config>> role_of(const role_flags& r) {
  using result = caf::expected<std::optional<ops::estimator::role_config>>;
  auto* env = std::getenv("DARCY_CONFIG");
  if (r.task_type.empty() && !(env && *env))
    return result{std::nullopt};
  auto role = r.task_type.empty()
                ? ops::estimator::parse_role_config(env)
                : ops::estimator::parse_role_config(r.cluster_spec, r.task_type, r.task_index);
  return role ? result{std::move(*role)} : result{std::move(role.error())};
}

/// Runs this process's role of distributed job `job` when DARCY_CONFIG or --task-type names
/// one, setting exit_code; false for a local run.
bool run_as_role(const role_flags& flags, const std::string& job, nlohmann::json job_options,
                 const std::string& model_dir, const std::string& summary, size_t threads,
                 int& exit_code) {
  auto what = "estimator " + job;
  auto role = role_of(flags);
  if (!role) {
    exit_code = fail(what + ": " + render(role.error()));
    return true;
  }
  if (auto err = check_flags_fit_the_run(flags, role->has_value())) {
    exit_code = fail(what + ": " + render(err));
    return true;
  }
  if (!*role)
    return false;
  job_options["train_examples"] = flags.train_examples;
  job_options["eval_examples"] = flags.eval_examples;
  job_options["workers"] = (*role)->count(ops::estimator::task_type::worker);
  ops::estimator::role_options r{
    .role = **role,
    .jobs = estimator_apps::estimator_jobs(),
    .job = job,
    .job_options = std::move(job_options),
    .max_steps = flags.max_steps,
    .model_dir = model_dir,
    .save_checkpoints_steps = flags.save_checkpoints_steps,
    .export_dir = flags.export_dir,
    .summary = summary,
    .ps_rejoin_timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.ps_rejoin_s * 1000))};
  r.node.threads = threads;
  if (!flags.node_config.empty())
    if (auto err = runtime::load_node_config(flags.node_config, r.node)) {
      exit_code = fail(what + ": " + render(err));
      return true;
    }
  auto err = ops::estimator::run_role(r, std::cout);
  exit_code = err ? fail(what + " (" + r.role.node_name() + "): " + render(err)) : 0;
  return true;
}

/// "AxB,CxD" as pairs of 0-based fields.
caf::expected<std::vector<std::pair<uint32_t, uint32_t>>> parse_crosses(const std::string& text) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  std::istringstream in{text};
  for (std::string pair; std::getline(in, pair, ',');) {
    auto x = pair.find('x');
    try {
      if (x == std::string::npos)
        throw std::invalid_argument{pair};
      size_t end_a = 0, end_b = 0;
      auto a = std::stoul(pair.substr(0, x), &end_a);
      auto b = std::stoul(pair.substr(x + 1), &end_b);
      if (end_a != x || end_b != pair.size() - x - 1)
        throw std::invalid_argument{pair};
      out.emplace_back(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
    } catch (const std::exception&) {
      return make_error(errc::invalid_config,
                        "--crosses: '" + pair + "' is not two field numbers joined by x");
    }
  }
  return out;
}

/// The flags of `estimator ctr` that only some of its runs read.
struct ctr_flags {
  /// Read by a run on files (--train), never by a stream.
  std::vector<CLI::Option*> files_only;
  /// Read by a --stream run only.
  std::vector<CLI::Option*> stream_only;
  /// Read by --stream generate only.
  std::vector<CLI::Option*> generator_only;
  /// Read only with --sync-dir, and --sync-token-file only with --sync-to.
  std::vector<CLI::Option*> sync_dir_only;
  CLI::Option* sync_to = nullptr;
  CLI::Option* sync_token_file = nullptr;
};

/// An error naming the first flag given that this `estimator ctr` run would ignore. A stream
/// has no distributed roles yet: a role's flag or DARCY_CONFIG is refused with --stream.
caf::error check_ctr_flags_fit_the_run(const ctr_flags& f, const role_flags& r,
                                       const estimator_apps::ctr_stream_run& run, bool streamed) {
  auto refuse = [](const CLI::Option* o, const std::string& why) {
    return make_error(errc::invalid_config, o->get_name() + " " + why);
  };
  if (!streamed) {
    if (auto* o = given(f.stream_only))
      return refuse(o, "applies to a --stream run only");
    return {};
  }
  if (auto* o = given(f.files_only))
    return refuse(o, "applies to a run on --train files, not to a --stream run");
  if (auto* o = given(r.with_task_type); o || !r.task_type.empty() || given(r.role_only))
    return refuse(o                      ? o
                  : !r.task_type.empty() ? r.task_type_option
                                         : given(r.role_only),
                  "names a distributed role; a --stream run has no roles yet (it trains in "
                  "this process)");
  if (auto* env = std::getenv("DARCY_CONFIG"); env && *env)
    return make_error(errc::invalid_config,
                      "DARCY_CONFIG names a distributed role; a --stream run has no roles yet "
                      "(unset it: the stream trains in this process)");
  if (run.source != "generate")
    if (auto* o = given(f.generator_only))
      return refuse(o, "applies to --stream generate only, not to '" + run.source + "'");
  if (run.online.sync.dir.empty())
    if (auto* o = given(f.sync_dir_only))
      return refuse(o, "goes with --sync-dir");
  if (f.sync_token_file->count() > 0 && f.sync_to->count() == 0)
    return refuse(f.sync_token_file, "goes with --sync-to");
  return {};
}

void add_ctr_command(CLI::App* cmd, int& exit_code) {
  auto o = std::make_shared<estimator_apps::ctr_options>();
  auto model = std::make_shared<std::string>("dlrm");
  auto crosses = std::make_shared<std::string>("0x1,2x5,3x8,10x13");
  auto dense_optimizer = std::make_shared<std::string>("adam");
  auto embedding_optimizer = std::make_shared<std::string>("adagrad");
  auto ctr = cmd->add_subcommand(
    "ctr",
    "Click-through prediction on Criteo-format files: DLRM or Wide & Deep, one dynamic "
    "embedding per categorical field");
  auto roles = std::make_shared<role_flags>();
  auto stream = std::make_shared<estimator_apps::ctr_stream_run>();
  auto flags = std::make_shared<ctr_flags>();
  auto train = ctr->add_option("--train", o->train, "Training file (Criteo TSV, plain or gzip)");
  auto streamed =
    ctr
      ->add_option("--stream", stream->source,
                   "Train online, window by window, each predicted before it is trained on "
                   "(progressive validation): 'generate' (the generator with a drift), '-' "
                   "(standard input) or a file that grows; a JSON line a window")
      ->excludes(train);
  auto stream_only = [&](CLI::Option* opt) {
    flags->stream_only.push_back(opt);
    return opt;
  };
  auto generator_only = [&](CLI::Option* opt) {
    flags->generator_only.push_back(stream_only(opt));
    return opt;
  };
  auto sync_dir_only = [&](CLI::Option* opt) {
    flags->sync_dir_only.push_back(stream_only(opt));
    return opt;
  };
  stream_only(
    ctr->add_option("--window", stream->online.window_rows, "With --stream: rows a window"))
    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  stream_only(
    ctr->add_option("--windows", stream->online.max_windows,
                    "With --stream: stop after N windows (0: never, or at the end of the input)"));
  generator_only(ctr->add_option("--drift-rows", stream->stream.drift_rows,
                                 "With --stream generate: rows a teacher lasts before half of it "
                                 "moves on (0: no drift)"));
  generator_only(ctr->add_option("--fresh-rate", stream->stream.generator.fresh_rate,
                                 "With --stream generate: the first share of fresh ids"))
    ->check(CLI::Range(0.0, 1.0));
  generator_only(ctr->add_option("--fresh-step", stream->stream.fresh_step,
                                 "With --stream generate: the share of fresh ids added at each "
                                 "drift"))
    ->check(CLI::Range(0.0, 1.0));
  stream_only(ctr->add_option("--sync-dir", stream->online.sync.dir,
                              "With --stream: the tables' incremental checkpoints for serving "
                              "copies to follow, a delta every --sync-every"));
  sync_dir_only(ctr->add_option_function<double>(
    "--sync-every",
    [stream](double s) {
      stream->online.sync.every = std::chrono::milliseconds{static_cast<int64_t>(s * 1000)};
    },
    "With --sync-dir: seconds between syncs (default 2; a sync waits for its window's end)"));
  sync_dir_only(ctr->add_option_function<double>(
    "--dense-sync-every",
    [stream](double s) {
      stream->online.sync.dense_every = std::chrono::milliseconds{static_cast<int64_t>(s * 1000)};
    },
    "With --sync-dir: seconds between syncs of the dense weights (default 10; each goes with "
    "a sync of the rows)"));
  sync_dir_only(ctr->add_option("--full-every", stream->online.sync.full_every,
                                "With --sync-dir: a full checkpoint after this many deltas"))
    ->check(CLI::Range(uint32_t{1}, uint32_t{1000000}));
  flags->sync_to = sync_dir_only(
    ctr->add_option("--sync-to", stream->online.sync.push.url,
                    "With --sync-dir: after each sync, ask this darcy serve model to follow it "
                    "(http://HOST:PORT/v1/models/NAME, its :sync)"));
  auto token_file = std::make_shared<std::string>();
  flags->sync_token_file = sync_dir_only(
    ctr->add_option("--sync-token-file", *token_file,
                    "With --sync-to: a file holding the bearer token of a principal with manage"));
  stream_only(ctr->add_option("--export", stream->online.export_dir,
                              "With --stream: export the model here once, after the first window "
                              "(a model folder for darcy serve, which can then follow the "
                              "syncs)"));
  generator_only(ctr->add_option("--stream-rows", stream->stream.rows,
                                 "With --stream generate: the rows it ends after (0: never)"));
  generator_only(
    ctr->add_option("--max-ids", stream->stream.generator.max_ids,
                    "With --stream generate: caps every field's cardinality (0: Kaggle's)"));
  flags->files_only.push_back(
    ctr->add_option("--eval", o->eval, "Test file; its F.probs, when present, give the Bayes AUC"));
  ctr->add_option("--model", *model, "dlrm or wide-deep");
  roles->local_only.push_back(
    ctr->add_option("--epochs", o->epochs, "Passes over the training file")
      ->check(CLI::Range(1, 1000)));
  flags->files_only.push_back(roles->local_only.back());
  ctr->add_option("--batch", o->batch, "Examples per step")->check(CLI::Range(1, 1 << 20));
  flags->files_only.push_back(
    ctr->add_option("--train-rows", o->train_rows, "Train on the first N rows only (0: all)"));
  flags->files_only.push_back(
    ctr->add_option("--eval-rows", o->eval_rows, "Evaluate on the first N rows only (0: all)"));
  ctr->add_option("--embedding-dim", o->embedding_dim, "Width of every field's rows")
    ->check(CLI::Range(1, 4096));
  ctr->add_option("--embedding-init", o->embedding_init,
                  "New rows start U(-a, a) with this a (0.01; 0: 1/sqrt(dim))");
  ctr->add_option("--bottom", o->bottom_units, "DLRM's bottom MLP (ends at the embedding dim)")
    ->delimiter(',');
  ctr->add_option("--top", o->top_units, "DLRM's top MLP (the logit layer follows)")
    ->delimiter(',');
  ctr->add_option("--hidden", o->hidden_units, "Wide & Deep's hidden layers")->delimiter(',');
  ctr->add_option("--crosses", *crosses,
                  "Wide & Deep's crossed field pairs, 0-based (default: the generator's)");
  ctr->add_option("--optimizer", *dense_optimizer,
                  "Of the dense variables: sgd, adagrad, momentum, adam or ftrl");
  ctr->add_option("--learning-rate", o->dense_optimizer.learning_rate,
                  "Learning rate of the dense variables");
  ctr->add_option("--embedding-optimizer", *embedding_optimizer,
                  "Of the embedding tables, applied in the shards");
  ctr->add_option("--embedding-learning-rate", o->embedding_optimizer.learning_rate,
                  "Learning rate of the embedding tables");
  ctr->add_flag("--skip-malformed", o->skip_malformed,
                "Count and skip malformed lines instead of stopping at the first");
  ctr->add_option("--leveldb", o->leveldb_dir,
                  "Keep the tables' rows in LevelDB databases under DIR, each behind a memory "
                  "tier (default: in the shards' memory)");
  ctr
    ->add_option("--memory-budget", o->memory_budget,
                 "With --leveldb: bytes of rows the memory tiers of all tables hold (4GiB)")
    ->transform(CLI::AsSizeValue(false));
  ctr
    ->add_option("--shards", o->shards, "Shards of every table (each gets its share of the budget)")
    ->check(CLI::Range(1, 1024));
  ctr->add_option("--min-count", o->admission_min_count,
                  "A key gets a row at its Nth sighting (a counting Bloom filter; 1: at once)");
  ctr->add_option("--threads", o->threads, "Threads of the products")->check(CLI::Range(1, 256));
  ctr
    ->add_option("--service-threads", o->service_threads,
                 "Threads of the in-process embedding service (its shards)")
    ->check(CLI::Range(1, 256));
  ctr->add_option("--seed", o->seed, "Seed of the weights and the tables' rows");
  flags->files_only.push_back(ctr->add_option(
    "--model-dir", o->model_dir,
    "Checkpoints (a rerun resumes from them; a --stream run resumes from --sync-dir)"));
  ctr->add_flag("--quiet", o->quiet, "No progress bar");
  add_role_flags(ctr, *roles);
  ctr->callback([=, &exit_code] {
    auto parsed = parse_crosses(*crosses);
    auto kind = estimator_apps::ctr_model_named(*model);
    auto dense = optimizer_kind_named(*dense_optimizer);
    auto embedding = optimizer_kind_named(*embedding_optimizer);
    if (!parsed || !kind || !dense || !embedding) {
      exit_code =
        fail("estimator ctr: " +
             (!parsed  ? render(parsed.error())
              : !kind  ? "--model must be dlrm or wide-deep, not " + *model
              : !dense ? "--optimizer: unknown optimizer " + *dense_optimizer
                       : "--embedding-optimizer: unknown optimizer " + *embedding_optimizer));
      return;
    }
    o->crosses = std::move(*parsed);
    o->model = *kind;
    o->dense_optimizer.kind = *dense;
    o->embedding_optimizer.kind = *embedding;
    if (auto err = check_ctr_flags_fit_the_run(*flags, *roles, *stream, streamed->count() > 0)) {
      exit_code = fail("estimator ctr", err);
      return;
    }
    if (streamed->count() > 0)
      o->train = stream->source; // the stream stands for the training file
    if (auto err = estimator_apps::validate(*o)) {
      exit_code = fail("estimator ctr", err);
      return;
    }
    if (streamed->count() > 0) {
      if (!token_file->empty()) {
        std::ifstream in{*token_file};
        if (!(in >> stream->online.sync.push.token)) {
          exit_code =
            fail("estimator ctr: --sync-token-file: cannot read a token from " + *token_file);
          return;
        }
      }
      stream->stream.generator.seed = o->seed;
      stream->stream.skip_malformed = o->skip_malformed;
      auto err = estimator_apps::run_ctr_stream(
        *o, *stream, [](const estimator_apps::ctr_stream_window& w) -> caf::error {
          std::cout << nlohmann::json{{"window", w.window},
                                      {"rows", w.rows},
                                      {"progressive_auc", w.auc},
                                      {"log_loss", w.log_loss},
                                      {"examples_per_s", w.examples_per_second},
                                      {"embedding_rows", w.embedding_rows},
                                      {"sync_checkpoint", w.sync_checkpoint},
                                      {"sync_full", w.sync_full},
                                      {"sync_bytes", w.sync_bytes},
                                      {"dense_synced", w.dense_synced},
                                      {"sync_status", w.sync_status},
                                      {"frozen_auc", std::isnan(w.frozen_auc)
                                                       ? nlohmann::json{}
                                                       : nlohmann::json(w.frozen_auc)}}
                         .dump()
                    << std::endl;
          return {};
        });
      exit_code = err ? fail("estimator ctr --stream", err) : 0;
      return;
    }
    if (run_as_role(*roles, "ctr", estimator_apps::ctr_job_options(*o), o->model_dir, "",
                    o->threads, exit_code))
      return;
    auto r = estimator_apps::run_ctr(*o);
    if (!r) {
      exit_code = fail("estimator ctr", r.error());
      return;
    }
    auto number = [](double v) { return std::isnan(v) ? nlohmann::json{} : nlohmann::json(v); };
    std::cout << nlohmann::json{{"model", to_string(o->model)},
                                {"train_examples", r->train_examples},
                                {"steps", r->steps},
                                {"train_seconds", r->train_seconds},
                                {"examples_per_s", r->examples_per_second},
                                {"auc", number(r->auc)},
                                {"log_loss", number(r->log_loss)},
                                {"bayes_auc", number(r->bayes_auc)},
                                {"auc_gap_to_bayes", number(r->bayes_auc - r->auc)},
                                {"embedding_rows", r->embedding_rows},
                                {"cached_rows", r->cached_rows},
                                {"cache_capacity", r->cache_capacity},
                                {"tier_hits", r->tier_hits},
                                {"tier_misses", r->tier_misses},
                                {"memory_tier_bytes", r->memory_tier_bytes},
                                {"disk_bytes", r->disk_bytes},
                                {"evictions", r->evictions},
                                {"timeline", r->timeline},
                                {"phase_seconds", r->phase_seconds},
                                {"peak_rss_bytes", runtime::peak_resident_bytes()},
                                {"threads", o->threads}}
                   .dump()
              << std::endl;
    exit_code = 0;
  });
}

} // namespace

void add_estimator_command(CLI::App& app, int& exit_code) {
  auto cmd = app.add_subcommand("estimator", "Estimator apps (train, evaluate, predict)");
  cmd->require_subcommand(1);
  auto o = std::make_shared<estimator_apps::fashion_mnist_options>();
  auto fm = cmd->add_subcommand("fashion-mnist", "A DNN classifier on Fashion-MNIST");
  fm->add_option("--data", o->data_dir, "Directory of the four IDX files (dataset-fashion-mnist)");
  auto roles = std::make_shared<role_flags>();
  roles->local_only.push_back(
    fm->add_option("--epochs", o->epochs, "Passes over the 60,000 training images")
      ->check(CLI::Range(1, 1000)));
  fm->add_option("--batch", o->batch, "Examples per step")->check(CLI::Range(1, 60000));
  auto hidden = fm->add_option("--hidden", o->hidden_units, "Hidden layer widths")->delimiter(',');
  fm->add_flag_callback(
      "--linear", [o] { o->hidden_units.clear(); },
      "The linear baseline: softmax regression on the pixels, no hidden layer")
    ->excludes(hidden);
  fm->add_option("--learning-rate", o->learning_rate, "Adam learning rate");
  fm->add_option("--threads", o->threads, "Threads of the products")->check(CLI::Range(1, 256));
  fm->add_option("--seed", o->seed, "Seed of the weights and the shuffling");
  fm->add_option("--model-dir", o->model_dir, "Checkpoints (a rerun resumes from them)");
  fm->add_option("--summary", o->summary,
                 "Append {step, loss, seconds} every 100 steps to this JSONL (a chief: at each "
                 "checkpoint, the workers' mean loss)");
  fm->add_flag("--quiet", o->quiet, "No progress bar");
  add_role_flags(fm, *roles);
  fm->callback([o, roles, &exit_code] {
    if (run_as_role(*roles, "fashion-mnist",
                    {{"data", o->data_dir},
                     {"batch", o->batch},
                     {"hidden", o->hidden_units},
                     {"learning_rate", o->learning_rate},
                     {"threads", o->threads},
                     {"seed", o->seed}},
                    o->model_dir, o->summary, o->threads, exit_code))
      return;
    auto data = estimator_apps::load_fashion_mnist(o->data_dir);
    if (!data) {
      exit_code = fail("estimator fashion-mnist", data.error());
      return;
    }
    auto r = estimator_apps::run_fashion_mnist(*o, *data);
    if (!r) {
      exit_code = fail("estimator fashion-mnist", r.error());
      return;
    }
    std::cout << nlohmann::json{{"test_accuracy", r->test_accuracy},
                                {"test_loss", r->test_loss},
                                {"steps", r->steps},
                                {"seconds", r->seconds},
                                {"steps_per_second", r->steps_per_second},
                                {"epochs", o->epochs},
                                {"threads", o->threads}}
                   .dump()
              << std::endl;
  });

  auto bg = std::make_shared<estimator_apps::brown_genre_options>();
  bg->corpus = "build/data/brown";
  auto genre =
    cmd->add_subcommand("brown-genre", "Wide & Deep on Brown passages to their category");
  genre->add_option("--corpus", bg->corpus, "Brown corpus directory (make demo fetches it)");
  genre->add_option("--passage-words", bg->passage_words, "Words per passage (at least)")
    ->check(CLI::Range(1, 100000));
  auto genre_roles = std::make_shared<role_flags>();
  genre_roles->local_only.push_back(
    genre->add_option("--epochs", bg->epochs, "Passes over the training passages")
      ->check(CLI::Range(1, 1000)));
  genre->add_option("--batch", bg->batch, "Passages per step")->check(CLI::Range(1, 100000));
  genre->add_option("--hash-buckets", bg->hash_buckets, "Buckets of the hashed words")
    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 24));
  genre
    ->add_option("--bigram-buckets", bg->bigram_buckets,
                 "Buckets of the crossed bigrams (0: no bigram cross)")
    ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 24));
  genre
    ->add_option("--embedding-dim", bg->embedding_dim, "Width of the raw words' dynamic embedding")
    ->check(CLI::Range(1, 4096));
  genre->add_option("--hidden", bg->hidden_units, "Hidden layer widths of the deep part")
    ->delimiter(',');
  genre->add_option("--dropout", bg->dropout, "Dropout after each hidden layer of the deep part")
    ->check(CLI::Range(0.0, 0.99));
  genre->add_option("--learning-rate", bg->learning_rate,
                    "Adam learning rate of the dense variables");
  genre->add_option("--embedding-learning-rate", bg->embedding_learning_rate,
                    "Adam learning rate of the deep part's word table (in the embedding service)");
  genre->add_option("--wide-learning-rate", bg->wide_learning_rate,
                    "Adam learning rate of the wide part's tables and the baseline's (in the "
                    "embedding service)");
  genre_roles->local_only.push_back(genre->add_flag(
    "!--no-validation", bg->validation,
    "Read each model's test accuracy after the last epoch, not at its best epoch on a "
    "validation split (every tenth training document)"));
  genre->add_option("--threads", bg->threads, "Threads of the products")->check(CLI::Range(1, 256));
  genre->add_option("--seed", bg->seed, "Seed of the weights and the shuffling");
  genre->add_option("--model-dir", bg->model_dir, "Checkpoints (a rerun resumes from them)");
  genre->add_option("--summary", bg->summary,
                    "Append {step, loss, seconds} of Wide & Deep every 100 steps to this JSONL (a "
                    "chief: at each checkpoint, the workers' mean loss)");
  genre->add_flag("--quiet", bg->quiet, "No progress bar");
  add_role_flags(genre, *genre_roles);
  genre->callback([bg, genre_roles, &exit_code] {
    if (run_as_role(*genre_roles, "brown-genre", brown_genre_job_options(*bg), bg->model_dir,
                    bg->summary, bg->threads, exit_code))
      return;
    auto data = estimator_apps::load_brown_genres(bg->corpus, bg->passage_words, bg->validation);
    if (!data) {
      exit_code = fail("estimator brown-genre", data.error());
      return;
    }
    auto r = estimator_apps::run_brown_genre(*bg, *data);
    if (!r) {
      exit_code = fail("estimator brown-genre", r.error());
      return;
    }
    auto per_epoch = [](const std::vector<estimator_apps::epoch_accuracy>& epochs) {
      auto out = nlohmann::json::array();
      for (auto& e : epochs)
        out.push_back({{"validation", e.validation}, {"test", e.test}});
      return out;
    };
    std::cout << nlohmann::json{{"test_accuracy", r->test_accuracy},
                                {"epoch", r->epoch},
                                {"per_epoch", per_epoch(r->epochs)},
                                {"bag_of_words_per_epoch", per_epoch(r->bag_of_words_epochs)},
                                {"majority_accuracy", r->majority_accuracy},
                                {"bag_of_words_accuracy", r->bag_of_words_accuracy},
                                {"bag_of_words_epoch", r->bag_of_words_epoch},
                                {"categories", r->categories},
                                {"train_passages", r->train_passages},
                                {"validation_passages", r->validation_passages},
                                {"test_passages", r->test_passages},
                                {"steps", r->steps},
                                {"steps_per_second", r->steps_per_second},
                                {"epochs", bg->epochs},
                                {"threads", bg->threads}}
                   .dump()
              << std::endl;
  });

  add_ctr_command(cmd, exit_code);

  auto sl = std::make_shared<estimator_apps::sparse2label_options>();
  sl->corpus = "build/data/brown";
  sl->model_dir = "build/sparse2label";
  auto labels = cmd->add_subcommand(
    "sparse2label",
    "Brown passages to their keywords (sampled softmax), one category added per round");
  labels->add_option("--corpus", sl->corpus, "Brown corpus directory (make demo fetches it)");
  labels->add_option("--passage-words", sl->passage_words, "Words per passage (at least)")
    ->check(CLI::Range(1, 100000));
  labels->add_option("--keywords", sl->keywords, "Labels per passage, at most")
    ->check(CLI::Range(1, 100));
  labels->add_option("--rounds", sl->rounds, "Rounds, one category each (0: every category)");
  labels->add_option("--epochs", sl->epochs, "Passes over the data so far, per round")
    ->check(CLI::Range(1, 1000));
  labels->add_option("--batch", sl->batch, "Passages per step")->check(CLI::Range(1, 100000));
  labels->add_option("--embedding-dim", sl->embedding_dim, "Width of the words' and labels' rows")
    ->check(CLI::Range(1, 4096));
  labels->add_option("--hidden", sl->hidden_units, "Width of the hidden layer")
    ->check(CLI::Range(1, 65536));
  labels->add_option("--num-sampled", sl->num_sampled, "Sampled negatives per step")
    ->check(CLI::Range(1, 100000));
  labels->add_option("--learning-rate", sl->learning_rate,
                     "Adam learning rate of the dense layers");
  labels->add_option("--embedding-learning-rate", sl->embedding_learning_rate,
                     "Adam learning rate of the words' and labels' tables");
  labels->add_option("--threads", sl->threads, "Threads of the products")
    ->check(CLI::Range(1, 256));
  labels->add_option("--seed", sl->seed, "Seed of the weights and the shuffling");
  labels->add_option("--model-dir", sl->model_dir, "Checkpoints, a directory per round");
  labels->add_option("--out", sl->out, "Report path without extension (OUT.tsv, OUT.png)");
  labels->add_option("--export-dir", sl->export_dir,
                     "Export the last round's model here, for darcy serve");
  labels->add_flag("--quiet", sl->quiet, "No progress bar");
  labels->callback([sl, &exit_code] {
    auto data = estimator_apps::load_sparse2label(sl->corpus, sl->passage_words, sl->keywords);
    if (!data) {
      exit_code = fail("estimator sparse2label", data.error());
      return;
    }
    auto rounds = estimator_apps::run_sparse2label(*sl, *data);
    if (!rounds) {
      exit_code = fail("estimator sparse2label", rounds.error());
      return;
    }
    for (auto& r : *rounds)
      std::cout << nlohmann::json{{"round", r.round},
                                  {"category", r.category},
                                  {"train_passages", r.train_passages},
                                  {"label_rows", r.label_rows},
                                  {"word_rows", r.word_rows},
                                  {"embedding_bytes", r.embedding_bytes},
                                  {"recall_at_10", r.recall_at_10},
                                  {"popular_recall_at_10", r.popular_recall_at_10},
                                  {"seconds", r.seconds}}
                     .dump()
                << std::endl;
    std::cout << "report: " << sl->out << ".tsv, " << sl->out << ".png" << std::endl;
  });

  auto summary = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>("loss");
  auto plot = cmd->add_subcommand("plot", "Plot a summary writer's JSONL as OUT.tsv and OUT.png");
  plot->add_option("summary", *summary, "The JSONL file")->required();
  plot->add_option("--out", *out, "Output path without extension");
  plot->callback([summary, out, &exit_code] {
    auto plot = estimator_apps::plot_summary(*summary, *out);
    if (!plot) {
      exit_code = fail("estimator plot", plot.error());
      return;
    }
    std::cout << plot->points << " points: " << *out << ".tsv, " << *out << ".png";
    if (plot->torn_lines > 0 || plot->non_finite > 0)
      std::cout << " (skipped: torn lines " << plot->torn_lines << ", non-finite losses "
                << plot->non_finite << ")";
    std::cout << std::endl;
  });
}

} // namespace darcy::apps
