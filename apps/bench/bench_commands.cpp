// The subcommands of `darcy-bench`: the benchmarks, each ending with one machine-readable JSON
// line, and the chaos soak.
#include "apps/bench/bench_commands.hpp"

#include "apps/bench/ctr_bench.hpp"
#include "apps/bench/embedding_bench.hpp"
#include "apps/bench/estimator_bench.hpp"
#include "apps/bench/messaging_bench.hpp"
#include "apps/bench/mips_bench.hpp"
#include "apps/bench/moe_bench.hpp"
#include "apps/bench/moe_gpu_bench.hpp"
#include "apps/bench/online_bench.hpp"
#include "apps/bench/redis_bench.hpp"
#include "apps/bench/sampling_bench.hpp"
#include "apps/bench/serve_direct.hpp"
#include "apps/bench/wals_bench.hpp"
#include "apps/bench/wals_scale.hpp"
#include "apps/command/command_line.hpp"

namespace darcy::apps {

namespace {

/// 0, or the failure of benchmark `what` printed as one error line, and 1.
int report(const std::string& what, const caf::error& err) {
  return err ? fail(what, err) : 0;
}

} // namespace

void add_bench_commands(CLI::App& app, int& exit_code) {
  auto* bench = &app;
  auto opts = std::make_shared<messaging_bench_options>();
  auto messaging = bench->add_subcommand("messaging", "Actor messaging versus plain TCP");
  messaging->add_option("--count-1k", opts->count_1k, "Round trips per 1 KiB run");
  messaging->add_option("--count-256k", opts->count_256k, "Round trips per 256 KiB run");
  messaging->add_option("--latency-count", opts->latency_count, "Sequential round trips");
  messaging->add_option("--window", opts->window, "Requests in flight");
  messaging->add_option("--repetitions", opts->repetitions, "Runs per figure (median)");
  messaging->callback(
    [opts, &exit_code] { exit_code = report("messaging", run_messaging_bench(*opts)); });

  auto mips = std::make_shared<mips_bench_options>();
  auto mips_cmd =
    bench->add_subcommand("mips", "Exact and quantized inner-product search versus FAISS");
  mips_cmd->add_option("--items", mips->items, "Synthetic items (without --factors)");
  mips_cmd->add_option("--dim", mips->dim, "Synthetic dimension");
  mips_cmd->add_option("--factors", mips->factors, "Item factors: a WALS model's V.f32");
  mips_cmd->add_option("--queries-b1", mips->queries_b1, "Queries searched one at a time");
  mips_cmd->add_option("--batches-b256", mips->batches_b256, "Batches of 256 queries");
  mips_cmd->add_option("-k", mips->k, "Neighbours per query")->check(CLI::Range(1, 1000));
  mips_cmd->add_option("--threads", mips->threads, "Threads, for both")->check(CLI::Range(1, 64));
  mips_cmd->add_option("--fashion-mnist", mips->fashion_mnist, "dataset-fashion-mnist's folder");
  mips_cmd->add_flag("!--exact-only", mips->ann, "Skip the quantized-search sweep");
  mips_cmd->add_option(
    "--faiss-families", mips->faiss_families,
    "FAISS indexes to sweep: all, none, or some of ivf-flat,ivf-pq,ivf-pq4fs,hnsw,"
    "l2-ivf-flat,l2-hnsw");
  mips_cmd->add_option("--radius-weight", mips->radius_weight,
                       "Darcy's probe order: weight of a list's longest residual");
  mips_cmd->add_option("--distance-weight", mips->distance_weight,
                       "Darcy's probe order: weight of the augmented centroid distance");
  mips_cmd->add_flag("--augmented-lists", mips->augmented_lists,
                     "Darcy's lists from the norm-augmented items (use --distance-weight 1)");
  mips_cmd
    ->add_option("--ann-thresholds", mips->ann_thresholds,
                 "Darcy's sweep: anisotropic thresholds T, an index each")
    ->delimiter(',');
  mips_cmd
    ->add_option("--ann-list-factors", mips->ann_list_factors,
                 "Darcy's sweep: lists per index, as factors of sqrt(items)")
    ->delimiter(',')
    ->check(CLI::PositiveNumber);
  mips_cmd->add_option("--ann-probes", mips->ann_probes, "Darcy's sweep: lists probed")
    ->delimiter(',');
  mips_cmd
    ->add_option("--faiss-list-factors", mips->faiss_list_factors,
                 "FAISS's IVF-Flat sweep: lists per index, as factors of sqrt(items)")
    ->delimiter(',')
    ->check(CLI::PositiveNumber);
  mips_cmd
    ->add_option("--ann-rerank", mips->ann_rerank,
                 "Darcy's sweep: candidates re-ranked (below k: k)")
    ->delimiter(',');
  mips_cmd->add_option("--faiss-build-budget", mips->faiss_build_budget_s,
                       "Seconds a FAISS or hnswlib build may take before it is stopped and "
                       "reported");
  mips_cmd
    ->add_option("--hnswlib-ms", mips->hnswlib_ms,
                 "hnswlib's graphs: the M of each (comma-separated), each swept over ef")
    ->delimiter(',')
    ->check(CLI::Range(2, 128));
  mips_cmd->add_flag_callback(
    "--no-hnswlib", [mips] { mips->hnswlib_ms.clear(); }, "Skip the hnswlib peer");
  mips_cmd
    ->add_option("--graph-ms", mips->graph_ms,
                 "Darcy's graphs: the M of each (comma-separated), each swept over ef")
    ->delimiter(',')
    ->check(CLI::Range(2, 128));
  mips_cmd->add_flag_callback(
    "--no-graph", [mips] { mips->graph_ms.clear(); }, "Skip Darcy's graph index");
  mips_cmd->add_flag("--graph-augmented", mips->graph_augmented,
                     "Link Darcy's graphs by the norm-augmented L2 distance");
  mips_cmd
    ->add_option("--point-seconds", mips->point_seconds,
                 "Seconds each sweep point repeats the queries, both sides")
    ->check(CLI::Range(0.0, 60.0));
  mips_cmd->callback([mips, &exit_code] { exit_code = report("mips", run_mips_bench(*mips)); });

  auto direct = std::make_shared<serve_direct_options>();
  auto direct_cmd = bench->add_subcommand(
    "serve-direct",
    "The in-process peer of apps/bench/serve.sh: an export's indexes called directly");
  direct_cmd->add_option("--model", direct->model_dir, "Export folder EXPORTS/<name>")->required();
  direct_cmd->add_option("--threads", direct->threads, "Query threads")->check(CLI::Range(1, 64));
  direct_cmd->add_option("-k", direct->k, "Neighbours per query")->check(CLI::Range(1, 1000));
  direct_cmd->add_option("--probes", direct->probes, "Lists scanned per shard");
  direct_cmd->add_option("--rerank", direct->rerank, "Candidates re-ranked per shard");
  direct_cmd->add_option("--ef", direct->ef, "Graph exports: the search beam per shard");
  direct_cmd->add_option("--seconds", direct->seconds, "Seconds measured");
  direct_cmd->callback(
    [direct, &exit_code] { exit_code = report("serve-direct", run_serve_direct(*direct)); });

  auto moe = std::make_shared<moe_bench_options>();
  auto moe_cmd = bench->add_subcommand(
    "moe",
    "One MoE layer (forward + backward) versus a dense layer of its multiply-adds and PyTorch");
  moe_cmd->add_option("--tokens", moe->tokens, "Tokens per step")->check(CLI::Range(1, 1 << 20));
  moe_cmd->add_option("--dim", moe->dim, "Model width d")->check(CLI::Range(1, 1 << 14));
  moe_cmd->add_option("--experts", moe->experts, "Experts n")->check(CLI::Range(1, 4096));
  moe_cmd->add_option("--steps", moe->steps, "Timed steps (median)")->check(CLI::Range(1, 1000));
  moe_cmd->add_option("--threads", moe->threads, "Threads, both sides")->check(CLI::Range(1, 256));
  moe_cmd->add_option("--settings", moe->settings, "seed (the paper's), ffn (top-2 FFN), or both");
  moe_cmd->add_flag("!--no-peer", moe->peer, "Skip the PyTorch peer");
  moe_cmd->add_flag("!--no-actors", moe->routers, "Skip the runs with experts as actors");
  moe_cmd->add_option("--python", moe->python, "Python with torch (Debian's python3-torch)");
  moe_cmd->callback([moe, &exit_code] { exit_code = report("moe", run_moe_bench(*moe)); });

  auto mg = std::make_shared<moe_gpu_bench_options>();
  auto mg_cmd = bench->add_subcommand(
    "moe-gpu",
    "The MoE layer on the GPU versus its CPU path, a dense layer of its multiply-adds "
    "on the GPU, and PyTorch on the GPU");
  mg_cmd->add_option("--tokens", mg->tokens, "Tokens per step")->check(CLI::Range(1, 1 << 22));
  mg_cmd->add_option("--dim", mg->dim, "Model width d")->check(CLI::Range(1, 1 << 14));
  mg_cmd->add_option("--experts", mg->experts, "Experts n")->check(CLI::Range(1, 4096));
  mg_cmd->add_option("--steps", mg->steps, "Timed GPU steps (median)")->check(CLI::Range(1, 10000));
  mg_cmd->add_option("--cpu-steps", mg->cpu_steps, "Timed CPU steps (0: skip the CPU path)")
    ->check(CLI::Range(0, 1000));
  mg_cmd->add_option("--threads", mg->threads, "Threads of the CPU path and PyTorch")
    ->check(CLI::Range(1, 256));
  mg_cmd->add_option("--settings", mg->settings, "seed (the paper's), ffn (top-2 FFN), or both");
  mg_cmd->add_flag("!--no-peer", mg->peer, "Skip PyTorch on the GPU");
  mg_cmd->add_option("--python", mg->python, "Python with a CUDA build of torch");
  mg_cmd->callback([mg, &exit_code] { exit_code = report("moe-gpu", run_moe_gpu_bench(*mg)); });

  auto est = std::make_shared<estimator_bench_options>();
  auto est_cmd = bench->add_subcommand(
    "estimator",
    "The Fashion-MNIST DNN through the Estimator versus PyTorch; test accuracy; "
    "Wide & Deep scaling from 1 worker up");
  est_cmd->add_option("--data", est->data_dir, "Fashion-MNIST IDX files (dataset-fashion-mnist)");
  est_cmd->add_option("--repeats", est->repeats, "Timed epochs per side (median)")
    ->check(CLI::Range(1, 100));
  est_cmd->add_option("--epochs", est->epochs, "Epochs of the accuracy run (0: skip it)");
  est_cmd->add_option("--threads", est->threads, "Threads, both sides")->check(CLI::Range(1, 256));
  est_cmd->add_flag("!--no-peer", est->peer, "Skip the PyTorch peer");
  est_cmd->add_option("--python", est->python, "Python with torch (Debian's python3-torch)");
  est_cmd->add_option("--corpus", est->corpus,
                      "Brown corpus of the scaling runs (make demo fetches it)");
  est_cmd->add_option("--scaling-steps", est->scaling_steps,
                      "Global steps of each scaling run (0: skip them)");
  est_cmd
    ->add_option("--scaling-repeats", est->scaling_repeats,
                 "Runs of each worker count, alternated (median)")
    ->check(CLI::Range(1, 100));
  est_cmd
    ->add_option("--scaling-workers", est->scaling_workers,
                 "Worker counts of the scaling runs, ascending from 1 (default 1,2)")
    ->delimiter(',')
    ->check(CLI::Range(1, 256));
  est_cmd->add_option("--scaling-ps", est->scaling_ps, "ps tasks of every scaling run")
    ->check(CLI::Range(1, 64));
  est_cmd->callback(
    [est, &exit_code] { exit_code = report("estimator", run_estimator_bench(*est)); });

  auto ctr = std::make_shared<ctr_bench_options>();
  auto ctr_cmd = bench->add_subcommand(
    "ctr", "DLRM and Wide & Deep on generated click data versus PyTorch's reference DLRM");
  ctr_cmd->add_option("--rows", ctr->rows, "Training rows")
    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  ctr_cmd->add_option("--test-rows", ctr->test_rows, "Test rows (later rows of the same stream)")
    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  ctr_cmd->add_option("--dir", ctr->dir, "Where the generated files are kept and reused");
  ctr_cmd->add_option("--max-ids", ctr->max_ids, "Cap every field's ids (0: Kaggle's)");
  ctr_cmd->add_option("--epochs", ctr->epochs, "Passes over the training rows")
    ->check(CLI::Range(1, 100));
  ctr_cmd->add_option("--batch", ctr->batch, "Examples per step")->check(CLI::Range(1, 1 << 20));
  ctr_cmd->add_option("--embedding-dim", ctr->embedding_dim, "Width of every field's rows")
    ->check(CLI::Range(1, 4096));
  ctr_cmd->add_option("--bottom", ctr->bottom_units, "Bottom MLP (ends at the embedding dim)")
    ->delimiter(',');
  ctr_cmd->add_option("--top", ctr->top_units, "Top MLP (Wide & Deep's DNN too)")->delimiter(',');
  ctr_cmd->add_option("--threads", ctr->threads, "Threads, every side")->check(CLI::Range(1, 256));
  ctr_cmd->add_option("--seed", ctr->seed, "Seed of the data and the models");
  ctr_cmd->add_flag("!--no-peer", ctr->peer, "Skip the PyTorch peers");
  ctr_cmd->add_option("--python", ctr->python, "Python with torch (Debian's python3-torch)");
  ctr_cmd->add_flag("!--no-quality", ctr->quality, "Skip the Kaggle-profile part (and its peers)");
  ctr_cmd->add_flag("!--no-cluster", ctr->cluster,
                    "Skip the DLRM as a job of local processes (2 ps holding the shards)");
  ctr_cmd->add_option("--cluster-steps", ctr->cluster_steps, "Global steps of that job")
    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  ctr_cmd->add_flag("--colossal", ctr->colossal,
                    "Also train on a Terabyte-profile stream with tables in LevelDB behind a "
                    "memory budget, against the same model in memory");
  ctr_cmd->add_option("--colossal-rows", ctr->colossal_rows, "Rows of the colossal stream")
    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  ctr_cmd
    ->add_option("--colossal-test-rows", ctr->colossal_test_rows,
                 "Held-out rows after the colossal stream")
    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  ctr_cmd
    ->add_option("--fresh-rate", ctr->fresh_rate, "Share of the stream's ids never seen before")
    ->check(CLI::Range(0.0, 1.0));
  ctr_cmd->add_option("--memory-budget", ctr->memory_budget,
                      "Bytes of the colossal run's memory tiers, all tables together");
  ctr_cmd
    ->add_option("--memory-rows", ctr->memory_rows,
                 "Rows of the in-memory comparison run (a prefix of the same stream)")
    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  ctr_cmd
    ->add_option("--colossal-shards", ctr->colossal_shards,
                 "Shards of every table in both colossal runs (one database each)")
    ->check(CLI::Range(1, 1024));
  ctr_cmd->add_option("--compare-rule", ctr->compare_rule,
                      "DLRM once more with this update rule on its tables (\"\": not run)");
  ctr_cmd->add_option("--prefetch-batches", ctr->prefetch_batches,
                      "Batches the colossal run looks ahead, their rows brought into memory "
                      "before their step (0: none, the default)");
  ctr_cmd->callback([ctr, &exit_code] { exit_code = report("ctr", run_ctr_bench(*ctr)); });

  auto emb = std::make_shared<embedding_bench_options>();
  auto embedding = bench->add_subcommand("embedding", "Embedding paths versus a dense gather");
  embedding->add_option("--keys", emb->keys, "Distinct keys");
  embedding->add_option("--dim", emb->dim, "Embedding dimension");
  embedding->add_option("--batch", emb->batch, "Keys per batch");
  embedding->add_option("--batches", emb->batches, "Batches per measurement");
  embedding->add_option("--zipf", emb->zipf, "Zipf exponent of the key stream");
  embedding->add_option("--shards", emb->shards, "Shards of the service");
  embedding->add_option("--leveldb-keys", emb->leveldb_keys, "Distinct keys for LevelDB");
  embedding->add_option("--repetitions", emb->repetitions, "Passes per figure (median)")
    ->check(CLI::Range(1, 101));
  embedding->add_option("--paths", emb->paths,
                        "Paths to run, comma-separated: store,service,direct,remote,leveldb,rules");
  embedding->add_option("--rule-plugin", emb->rule_plugin,
                        "The plugin of rule_update_vs_builtin (default: "
                        "libdarcy_rule_bench_adagrad.so beside darcy-bench)");
  embedding->callback(
    [emb, &exit_code] { exit_code = report("embedding", run_embedding_bench(*emb)); });

  auto smp = std::make_shared<sampling_bench_options>();
  auto sampling = bench->add_subcommand(
    "sampling", "A sampled softmax's draw on tables of growing size, in memory and on LevelDB");
  sampling->add_option("--rows", smp->rows, "Table sizes, smallest first (comma-separated)")
    ->delimiter(',');
  sampling->add_option("--dim", smp->dim, "Embedding dimension")->check(CLI::Range(1, 4096));
  sampling->add_option("--batch", smp->batch, "Positives per call");
  sampling->add_option("--num-sampled", smp->num_sampled, "Negatives per call");
  sampling->add_option("--calls", smp->calls, "Timed calls per table (median)");
  sampling->add_option("--tiers", smp->tiers, "Tiers to run, comma-separated: memory,leveldb");
  sampling->add_option("--dir", smp->dir, "Folder of the LevelDB tables");
  sampling
    ->add_option("--cache-fraction", smp->cache_fraction,
                 "The LevelDB tier's cache, as a fraction of the rows")
    ->check(CLI::Range(0.0, 1.0));
  sampling->add_option("--shards", smp->shards, "Shards of the service")->check(CLI::Range(1, 64));
  sampling->add_option("--live-ann-rows", smp->live_ann.rows,
                       "Rows of the live table the ANN figures are measured on (0: none)");
  sampling->add_option("--ann-queries", smp->live_ann.queries, "Queries of the live ANN figures")
    ->check(CLI::Range(1, 100000));
  sampling->add_option("--ann-probes", smp->live_ann.probes, "Probe counts swept (comma-separated)")
    ->delimiter(',');
  sampling->add_option("--ann-update-seconds", smp->live_ann.update_seconds,
                       "How long the update stream runs while staleness is measured");
  sampling->add_option("--ann-faiss-families", smp->live_ann.faiss_families,
                       "FAISS families of the live ANN peer (none: no peer)");
  sampling->callback(
    [smp, &exit_code] { exit_code = report("sampling", run_sampling_bench(*smp)); });

  auto red = std::make_shared<redis_bench_options>();
  auto redis_cmd = bench->add_subcommand(
    "redis",
    "Lookups from the Redis store versus redis-benchmark GETs, and its cache on a Zipf stream");
  redis_cmd->add_option("--rows", red->rows, "Rows stored in Redis");
  redis_cmd->add_option("--dim", red->dim, "Embedding dimension");
  redis_cmd->add_option("--batch", red->batch, "Keys per lookup");
  redis_cmd->add_option("--batches", red->batches, "Lookups per pass");
  redis_cmd->add_option("--repetitions", red->repetitions, "Passes per figure (median)")
    ->check(CLI::Range(1, 101));
  redis_cmd->add_option("--peer-requests", red->peer_requests, "Requests of redis-benchmark");
  redis_cmd->add_option("--zipf", red->zipf, "Zipf exponent of the cached reader's stream");
  redis_cmd->add_option("--cache-fraction", red->cache_fraction,
                        "The cached reader's cache, as a fraction of the rows");
  redis_cmd->add_option("--staleness-ms", red->staleness_ms, "The cached reader's staleness bound");
  redis_cmd->callback([red, &exit_code] { exit_code = report("redis", run_redis_bench(*red)); });

  auto wals = std::make_shared<wals_bench_options>();
  auto wals_cmd = bench->add_subcommand("wals", "Distributed WALS versus a plain Eigen loop");
  wals_cmd->add_option("--rows", wals->rows, "Synthetic rows");
  wals_cmd->add_option("--cols", wals->cols, "Synthetic columns");
  wals_cmd->add_option("--nnz", wals->nnz, "Synthetic entries");
  wals_cmd->add_option("--dim", wals->dim, "Factor dimension");
  wals_cmd->add_option("--threads", wals->threads, "Workers and local threads");
  wals_cmd->add_option("--iters", wals->iters, "CG iterations (the first is not counted)");
  wals_cmd->add_option("--chol-iters", wals->chol_iters, "Cholesky iterations");
  wals_cmd->add_option("--cg-steps", wals->cg_steps, "CG steps per row");
  wals_cmd->add_option("--lastfm", wals->lastfm, "Last.fm-2k user_artists.dat");
  wals_cmd->add_flag("--cluster", wals->cluster,
                     "In process against 2 node processes this benchmark starts");
  auto scale = std::make_shared<wals_scale_options>();
  auto scale_on = std::make_shared<bool>(false);
  wals_cmd->add_flag("--scale", *scale_on,
                     "10M x 10M (500M entries) read from disk by blocks on 2 node processes, "
                     "against 1M x 1M");
  wals_cmd->add_option("--scale-rows", scale->rows, "--scale: rows");
  wals_cmd->add_option("--scale-cols", scale->cols, "--scale: columns");
  wals_cmd->add_option("--scale-nnz", scale->nnz, "--scale: entries");
  wals_cmd->add_option("--ref-rows", scale->ref_rows, "--scale: the reference's rows");
  wals_cmd->add_option("--ref-cols", scale->ref_cols, "--scale: the reference's columns");
  wals_cmd->add_option("--ref-nnz", scale->ref_nnz, "--scale: the reference's entries");
  wals_cmd->add_option("--scale-sweeps", scale->sweeps, "--scale: sweeps (2 at least)")
    ->check(CLI::Range(2u, 100u));
  wals_cmd->add_option("--blocks-per-worker", scale->blocks_per_worker,
                       "--scale: blocks a side, per worker");
  wals_cmd->add_option("--shards", scale->shards, "--scale: factor shards on the two nodes")
    ->check(CLI::Range(1u, 64u));
  wals_cmd->add_option("--dir", scale->dir, "--scale: where the matrices' sides are kept");
  wals_cmd->add_option("--memory-budget", scale->memory_budget,
                       "--scale: bytes the three processes' peak RSS may sum to");
  wals_cmd->callback([wals, scale, scale_on, &exit_code] {
    if (!*scale_on) {
      exit_code = report("wals", run_wals_bench(*wals));
      return;
    }
    scale->dim = wals->dim;
    scale->cg_steps = wals->cg_steps;
    scale->threads = wals->threads;
    exit_code = report("wals", run_wals_scale(*scale));
  });

  auto online = std::make_shared<online_bench_options>();
  auto online_cmd = bench->add_subcommand(
    "online", "Online training synced to sharded serving versus the model exported once");
  online_cmd->add_option("--dir", online->dir, "Work folder (emptied first)");
  online_cmd->add_option("--seconds", online->seconds, "Seconds of training while serving")
    ->check(CLI::PositiveNumber);
  auto seconds = [](std::chrono::milliseconds& into) {
    return [&into](double s) { into = std::chrono::milliseconds{static_cast<int64_t>(s * 1000)}; };
  };
  online_cmd->add_option_function<double>("--sync-every", seconds(online->sync_every),
                                          "Seconds between syncs of the rows (2)");
  online_cmd->add_option_function<double>("--dense-sync-every", seconds(online->dense_sync_every),
                                          "Seconds between syncs of the dense weights (10)");
  online_cmd->add_option("--window", online->window_rows, "Rows of a window")
    ->check(CLI::Range(uint64_t{100}, uint64_t{10'000'000}));
  online_cmd->add_option("--qps", online->qps, "The client's fixed rate")
    ->check(CLI::Range(0.1, 10000.0));
  online_cmd->add_option("--instances", online->instances, "Instances of a request")
    ->check(CLI::Range(size_t{1}, size_t{4096}));
  online_cmd->add_option("--drift-rows", online->drift_rows, "Rows a teacher phase lasts");
  online_cmd->add_option("--fresh-rate", online->fresh_rate, "The first share of fresh ids")
    ->check(CLI::Range(0.0, 1.0));
  online_cmd->add_option("--fresh-step", online->fresh_step, "Fresh share added at each drift")
    ->check(CLI::Range(0.0, 1.0));
  online_cmd->add_option("--max-ids", online->max_ids, "Caps every field's ids (0: Kaggle's)");
  online_cmd->add_option("--threads", online->threads, "Threads of the trainer")
    ->check(CLI::Range(1, 64));
  online_cmd->add_option("--seed", online->seed, "Seed of the stream and the model");
  online_cmd
    ->add_option_function<std::string>(
      "--sync-send",
      [online](const std::string& mode) { online->push = *ops::online::push_mode_named(mode); },
      "What a push carries: rows (the rows serving lacks) or folder (the sync folder's path)")
    ->check(CLI::IsMember({"rows", "folder"}));
  online_cmd->add_flag("--quiet", online->quiet, "No progress lines");
  online_cmd->add_flag("--cluster", online->cluster,
                       "Train as a distributed job (a chief, 2 workers, 2 ps) and serve from 4 "
                       "nodes (2 shards x 2 replicas), each process in a network namespace of "
                       "its own, a serving node SIGKILLed half way (needs root)");
  online_cmd->add_option("--batch", online->batch, "With --cluster: examples a step")
    ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  online_cmd
    ->add_option("--memory-budget", online->memory_budget,
                 "With --cluster: bytes of rows each ps's memory tiers hold (the tables live "
                 "in LevelDB behind them; the one-process run gets both ps's)")
    ->transform(CLI::AsSizeValue(false));
  online_cmd
    ->add_option("--local-seconds", online->local_seconds,
                 "With --cluster: seconds the one-process stream is measured first")
    ->check(CLI::PositiveNumber);
  online_cmd->add_option("--full-every", online->full_every, "A full sync after this many deltas")
    ->check(CLI::Range(uint32_t{1}, uint32_t{1000000}));
  online_cmd->callback(
    [online, &exit_code] { exit_code = report("online", run_online_bench(*online)); });
}

} // namespace darcy::apps
