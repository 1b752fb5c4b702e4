// `darcy estimator ctr`: DLRM or Wide & Deep on Criteo-format files, locally or as a role of a
// distributed job, or online on a stream (--stream); each run refuses the flags it would ignore.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/cli/commands.hpp"
#include "apps/cli/estimator_roles.hpp"
#include "apps/cli/plugin_option.hpp"
#include "apps/estimator/ctr.hpp"
#include "apps/estimator/estimator_jobs.hpp"
#include "messages/error.hpp"
#include "ops/ctr/ctr_stream_input.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/estimator/export/export.hpp"
#include "ops/online/sync_writer.hpp"
#include "runtime/process/machine.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::apps {

namespace {

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
  /// Read only by a stream trained in this process (a distributed one trains to --max-steps;
  /// its chief exports before its first sync).
  std::vector<CLI::Option*> local_stream_only;
  /// Read by a distributed stream's chief too (its checkpoints).
  CLI::Option* model_dir = nullptr;
  /// Read only with --sync-dir, and these only with --sync-to.
  std::vector<CLI::Option*> sync_dir_only;
  CLI::Option* sync_to = nullptr;
  std::vector<CLI::Option*> sync_to_only;
};

/// An error naming the first flag given that this `estimator ctr` run would ignore. A stream
/// with a distributed role (`distributed`) trains to --max-steps, has no windows or export of
/// its own, and reads --model-dir for its chief's checkpoints; run_as_role checks the role's
/// own flags.
caf::error check_ctr_flags_fit_the_run(const ctr_flags& f,
                                       const estimator_apps::ctr_stream_run& run, bool streamed,
                                       bool distributed) {
  auto refuse = [](const CLI::Option* o, const std::string& why) {
    return make_error(errc::invalid_config, o->get_name() + " " + why);
  };
  if (!streamed) {
    if (auto* o = given(f.stream_only))
      return refuse(o, "applies to a --stream run only");
    return {};
  }
  for (auto* o : f.files_only)
    if (o->count() > 0 && !(distributed && o == f.model_dir))
      return refuse(o, "applies to a run on --train files, not to a --stream run");
  if (distributed) {
    if (auto* o = given(f.local_stream_only))
      return refuse(o,
                    "applies to a stream trained in this process; a distributed stream "
                    "trains to --max-steps");
    if (run.source == "-")
      return make_error(errc::invalid_config,
                        "a distributed stream reads 'generate' or a file, not standard input");
  }
  if (run.source != "generate")
    if (auto* o = given(f.generator_only))
      return refuse(o, "applies to --stream generate only, not to '" + run.source + "'");
  if (run.online.sync.dir.empty())
    if (auto* o = given(f.sync_dir_only))
      return refuse(o, "goes with --sync-dir");
  if (f.sync_to->count() == 0)
    if (auto* o = given(f.sync_to_only))
      return refuse(o, "goes with --sync-to");
  return {};
}

/// `t` on the system clock, in milliseconds since the epoch: a time other processes on the host
/// can compare with theirs (darcy-bench online --cluster).
int64_t unix_ms(std::chrono::steady_clock::time_point t) {
  auto system = std::chrono::system_clock::now() -
                std::chrono::duration_cast<std::chrono::system_clock::duration>(
                  std::chrono::steady_clock::now() - t);
  return std::chrono::duration_cast<std::chrono::milliseconds>(system.time_since_epoch()).count();
}

/// The stats of every table of the newest sync under `sync_dir`, added up.
caf::expected<embedding_stats> table_totals(ops::session& s, const std::string& sync_dir) {
  auto head = stores::checkpoint_dir{sync_dir}.read_manifest();
  if (!head)
    return std::move(head.error());
  embedding_stats total;
  for (auto& entry : head->embeddings) {
    auto st = ops::stats(s, entry.config.name);
    if (!st)
      return std::move(st.error());
    total.rows += st->rows;
    total.cached_rows += st->cached_rows;
  }
  return total;
}

/// A distributed stream's chief: on_step writes a sync every policy.every (none without a
/// folder), and the last one when the job is done, each a JSON line; with `export_dir`, the
/// model is exported there once, before the first sync, on a batch of `sample` (not again by a
/// job that resumes from a sync while an export is there). on_restore resumes from the
/// folder's last sync when it is newer than the last checkpoint: its tables, and the dense
/// weights of its last dense sync.
struct chief_hooks {
  ops::estimator::chief_step_fn on_step;
  ops::estimator::chief_restore_fn on_restore;
};

chief_hooks chief_syncs(const ops::online::sync_policy& policy, const std::string& export_dir,
                        ops::estimator::input_fn sample) {
  if (policy.dir.empty())
    return {};
  auto writer = std::make_shared<ops::online::sync_writer>(policy);
  auto exported = std::make_shared<bool>(export_dir.empty());
  chief_hooks hooks;
  hooks.on_step = [=](ops::estimator::estimator& chief, ops::session* embeddings, uint64_t step,
                      bool done) -> caf::error {
    if (!embeddings || (!done && !writer->due()))
      return {};
    if (!*exported) {
      if (auto fetched = chief.fetch_server_state(); !fetched)
        return std::move(fetched.error());
      auto version = ops::estimator::export_model(chief, export_dir, sample);
      if (!version)
        return std::move(version.error());
      *exported = true;
      std::cout
        << nlohmann::json{{"global_step", step}, {"exported", export_dir + "/" + *version}}.dump()
        << std::endl;
    }
    auto cut_ms = unix_ms(std::chrono::steady_clock::now());
    auto r = writer->write(*embeddings, chief, static_cast<int64_t>(step), done);
    if (!r)
      return std::move(r.error());
    nlohmann::json line{{"global_step", step},
                        {"sync_checkpoint", r->checkpoint},
                        {"sync_full", r->full},
                        {"sync_bytes", r->bytes},
                        {"dense_synced", r->dense},
                        {"sync_status", r->push.status},
                        {"push_bytes", r->push.bytes},
                        {"push_whole_chain", r->push.whole_chain},
                        {"cut_ms", cut_ms}};
    if (r->push_sent != std::chrono::steady_clock::time_point{})
      line.update(
        {{"push_sent_ms", unix_ms(r->push_sent)}, {"push_answered_ms", unix_ms(r->push_answered)}});
    auto totals = table_totals(*embeddings, policy.dir);
    if (!totals)
      return std::move(totals.error());
    line.update({{"embedding_rows", totals->rows}, {"cached_rows", totals->cached_rows}});
    std::cout << line.dump() << std::endl;
    return {};
  };
  hooks.on_restore = [=](ops::estimator::estimator& chief,
                         uint64_t step) -> caf::expected<uint64_t> {
    auto* embeddings = chief.config().embeddings;
    auto head = stores::checkpoint_dir{policy.dir}.read_manifest();
    if (!embeddings || (!head && is(head.error(), errc::not_found)))
      return step;
    if (!head)
      return std::move(head.error());
    if (head->step <= static_cast<int64_t>(step))
      return step;
    auto synced = writer->resume(*embeddings);
    if (!synced)
      return std::move(synced.error());
    if (!*synced)
      return step;
    // Serving follows the export it has and the syncs after it: a resumed job does not
    // export again (as a resumed stream in one process does not).
    *exported = *exported || ops::estimator::is_estimator_export(export_dir);
    auto dense = ops::estimator::read_dense_sync(chief, policy.dir);
    if (!dense && !is(dense.error(), errc::not_found))
      return std::move(dense.error());
    std::cerr << "chief: resumed from the sync at global step " << **synced
              << " (the checkpoint was at " << step << "): its tables, and the dense weights of "
              << (dense ? "the dense sync at global step " + std::to_string(*dense)
                        : "the checkpoint (no dense sync)")
              << std::endl;
    return static_cast<uint64_t>(**synced);
  };
  return hooks;
}

} // namespace

void add_estimator_ctr_command(CLI::App* cmd, int& exit_code) {
  auto o = std::make_shared<estimator_apps::ctr_options>();
  auto model = std::make_shared<std::string>("dlrm");
  auto crosses = std::make_shared<std::string>("0x1,2x5,3x8,10x13");
  auto dense_optimizer = std::make_shared<std::string>("adam");
  auto embedding_optimizer = std::make_shared<std::string>("adagrad");
  auto plugins = std::make_shared<std::vector<std::string>>();
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
  auto local_stream_only = [&](CLI::Option* opt) {
    flags->local_stream_only.push_back(stream_only(opt));
    return opt;
  };
  local_stream_only(
    ctr->add_option("--window", stream->online.window_rows, "With --stream: rows a window"))
    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  local_stream_only(
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
  flags->sync_to_only.push_back(sync_dir_only(
    ctr->add_option("--sync-token-file", *token_file,
                    "With --sync-to: a file holding the bearer token of a principal with manage")));
  flags->sync_to_only.push_back(sync_dir_only(
    ctr
      ->add_option_function<std::string>(
        "--sync-send",
        [stream](const std::string& mode) {
          stream->online.sync.push.mode = *ops::online::push_mode_named(mode);
        },
        "With --sync-to: what a push carries: rows (the rows and dense weights the model lacks, "
        "so serving needs no access to --sync-dir; the default) or folder (the path of "
        "--sync-dir, which every serving host must read)")
      ->check(CLI::IsMember({"rows", "folder"}))));
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
                  "Of the embedding tables, applied in the shards: an optimizer as --optimizer, "
                  "or any update rule by name (rowwise_adagrad, clipped_adagrad, or a --plugin's)");
  add_plugin_option(ctr, *plugins);
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
    ->add_option("--prefetch-batches", o->prefetch_batches,
                 "Batches read ahead whose rows the tables bring into memory before their step "
                 "(in-process runs and a job's workers; 0: none, the default)")
    ->capture_default_str();
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
  flags->model_dir = ctr->add_option(
    "--model-dir", o->model_dir,
    "Checkpoints (a rerun resumes from them; a --stream run resumes from --sync-dir, a "
    "distributed one's chief from here)");
  flags->files_only.push_back(flags->model_dir);
  ctr->add_flag("--quiet", o->quiet, "No progress bar");
  add_role_flags(ctr, *roles);
  ctr->callback([=, &exit_code] {
    if ((exit_code = load_plugins(*plugins, "estimator ctr")) != 0)
      return;
    auto parsed = parse_crosses(*crosses);
    auto kind = estimator_apps::ctr_model_named(*model);
    auto dense = optimizer_kind_named(*dense_optimizer);
    auto embedding =
      estimator_apps::set_optimizer_named(o->embedding_optimizer, *embedding_optimizer);
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
    if (auto err = check_ctr_flags_fit_the_run(*flags, *stream, streamed->count() > 0,
                                               names_a_role(*roles))) {
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
      roles->app = "ctr";
      roles->local_length = "--windows";
      auto chief = chief_syncs(
        stream->online.sync, stream->online.export_dir,
        ops::ctr::ctr_stream_input(stream->source, stream->stream, {.batch_size = o->batch}));
      if (run_as_role(*roles, "ctr-stream", estimator_apps::ctr_stream_job_options(*o, *stream),
                      o->model_dir, "", o->threads, exit_code, chief.on_step, chief.on_restore))
        return;
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
                                      {"push_bytes", w.push_bytes},
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
                                {"disk_reads", r->disk_reads},
                                {"prefetched_rows", r->prefetched_rows},
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

} // namespace darcy::apps
