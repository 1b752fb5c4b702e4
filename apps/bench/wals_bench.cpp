#include "apps/bench/wals_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>

#include "apps/bench/node_pair.hpp"
#include "apps/wals/wals_jobs.hpp"
#include "compute/stats.hpp"
#include "compute/wals_math.hpp"
#include "messages/error.hpp"

namespace darcy::apps {

namespace {

using clock = std::chrono::steady_clock;

/// The median sweep time, leaving out the first sweep (start-up) when there are more.
double per_iter(std::vector<double> sweeps) {
  if (sweeps.size() > 1)
    sweeps.erase(sweeps.begin());
  return compute::percentile(sweeps, 0.5);
}

/// Floating-point operations of one iteration (both half-steps), counted as the kernels do
/// them: CG per entry 4d (b and the residual) + 4d per step, per row 2d^2 per step and once
/// for the residual; Cholesky per entry 2d^2 (the Gramian update) + 2d, per row d^3/3 + 2d^2.
double flops_per_iter(const compute::csr_matrix& m, const wals_params& p) {
  double d = p.dim, nnz = 2.0 * m.nnz(), rows = static_cast<double>(m.rows + m.cols);
  if (p.solver == wals_solver::cg)
    return nnz * (4 * d + 4 * d * p.cg_steps) + rows * 2 * d * d * (1 + p.cg_steps);
  return nnz * (2 * d * d + 2 * d) + rows * (d * d * d / 3 + 2 * d * d);
}

struct actor_run {
  double s_per_iter = 0;
  double loss = 0;
  /// The factors (kept only when asked for).
  stores::float_matrix u, v;
};

/// Distributed WALS on `data` through a session of `so` (in process, or a cluster's seed).
caf::expected<actor_run> run_actors(const std::shared_ptr<const stores::wals_dataset>& data,
                                    const wals_bench_options& opts, wals_params p, uint32_t iters,
                                    ops::session_options so = {}, bool keep_factors = false) {
  so.threads = opts.threads;
  auto s = ops::session::open(so);
  if (!s)
    return std::move(s.error());
  ops::wals_train_options o;
  o.params = p;
  o.sweeps = iters;
  o.workers = opts.threads;
  o.data.rows = data->matrix.rows;
  o.data.cols = data->matrix.cols;
  o.data.nnz = opts.nnz;
  std::vector<double> sweeps;
  auto last = clock::now();
  o.on_progress = [&](const wals_progress& pr) {
    if (pr.side != wals_side::cols)
      return;
    sweeps.push_back(compute::seconds_since(last));
    last = clock::now();
  };
  auto result = ops::train_wals(**s, o, data);
  if (!result)
    return std::move(result.error());
  actor_run run{per_iter(sweeps), result->losses.empty() ? 0 : result->losses.back(), {}, {}};
  if (keep_factors) {
    run.u = std::move(result->u);
    run.v = std::move(result->v);
  }
  return run;
}

/// `bench wals --cluster`: the same CG run in process and with its two workers on two node
/// processes (the factor shards stay in this process), factors compared bit for bit.
caf::error run_cluster(const wals_bench_options& opts,
                       const std::shared_ptr<const stores::wals_dataset>& data) {
  wals_params cg;
  cg.dim = opts.dim;
  cg.cg_steps = opts.cg_steps;
  auto local = run_actors(data, opts, cg, opts.iters, {}, true);
  if (!local)
    return local.error();
  std::printf("in process:       %.3f s/iter  loss %.6g\n", local->s_per_iter, local->loss);
  std::fflush(stdout);
  auto nodes = start_node_pair("wals");
  if (!nodes)
    return with_step("starting nodes", nodes.error());
  ops::session_options so;
  so.name = "bench";
  so.seed = nodes->a.address;
  so.timeout = std::chrono::minutes(5); // the workers load the matrix as they start
  auto cluster = run_actors(data, opts, cg, opts.iters, so, true);
  nodes->stop();
  if (!cluster)
    return cluster.error();
  bool identical = cluster->u.values == local->u.values && cluster->v.values == local->v.values;
  std::printf("2 node processes: %.3f s/iter  loss %.6g  factors %s\n", cluster->s_per_iter,
              cluster->loss, identical ? "bit-identical" : "DIFFER");
  std::printf(
    "{\"bench\":\"wals\",\"metrics\":{\"rows\":%llu,\"cols\":%llu,\"nnz\":%llu,"
    "\"dim\":%u,\"workers\":%u,\"local_s_per_iter\":%.4f,"
    "\"cluster_s_per_iter\":%.4f,\"cluster_vs_local\":%.3f,\"bit_identical\":%d}}\n",
    static_cast<unsigned long long>(data->matrix.rows),
    static_cast<unsigned long long>(data->matrix.cols),
    static_cast<unsigned long long>(data->matrix.nnz()), opts.dim, opts.threads, local->s_per_iter,
    cluster->s_per_iter, local->s_per_iter / cluster->s_per_iter, identical ? 1 : 0);
  if (!identical)
    return make_error(errc::invalid_argument,
                      "the factors of the cluster run differ from the in-process run's");
  return {};
}

} // namespace

caf::error run_wals_bench(const wals_bench_options& opts) {
  std::printf("# synthetic %llu x %llu, ~%llu entries, dim %u, %u threads, %u cores\n",
              static_cast<unsigned long long>(opts.rows),
              static_cast<unsigned long long>(opts.cols), static_cast<unsigned long long>(opts.nnz),
              opts.dim, opts.threads, std::thread::hardware_concurrency());
  auto start = clock::now();
  wals_data_spec spec;
  spec.rows = opts.rows;
  spec.cols = opts.cols;
  spec.nnz = opts.nnz;
  auto loaded = stores::load_dataset(spec, opts.threads);
  if (!loaded)
    return loaded.error();
  auto data = std::make_shared<const stores::wals_dataset>(std::move(*loaded));
  auto& m = data->matrix;
  std::printf("generated %llu entries in %.2f s\n", static_cast<unsigned long long>(m.nnz()),
              compute::seconds_since(start));
  std::fflush(stdout);
  if (opts.cluster)
    return run_cluster(opts, data);

  wals_params cg;
  cg.dim = opts.dim;
  cg.cg_steps = opts.cg_steps;
  auto chol = cg;
  chol.solver = wals_solver::cholesky;

  auto cg_run = run_actors(data, opts, cg, opts.iters);
  if (!cg_run)
    return cg_run.error();
  std::printf("actors cg:       %.3f s/iter  loss %.6g\n", cg_run->s_per_iter, cg_run->loss);
  std::fflush(stdout);

  auto at = compute::transpose(m);
  std::vector<float> u, v;
  std::vector<double> sweeps;
  auto last = clock::now();
  auto losses = compute::train_local(m, at, cg, opts.iters, opts.threads, u, v, [&](uint32_t) {
    sweeps.push_back(compute::seconds_since(last));
    last = clock::now();
  });
  double local_s = per_iter(sweeps);
  std::printf("local eigen cg:  %.3f s/iter  loss %.6g\n", local_s, losses.back());
  std::fflush(stdout);
  u.clear();
  u.shrink_to_fit();
  v.clear();
  v.shrink_to_fit();
  at = {};

  auto chol_run = run_actors(data, opts, chol, opts.chol_iters);
  if (!chol_run)
    return chol_run.error();
  std::printf("actors cholesky: %.3f s/iter  loss %.6g\n", chol_run->s_per_iter, chol_run->loss);
  std::fflush(stdout);

  double nnz = static_cast<double>(m.nnz());
  double cores = opts.threads;
  double cg_entries = nnz / (cg_run->s_per_iter * cores);
  double chol_entries = nnz / (chol_run->s_per_iter * cores);
  double cg_gflops = flops_per_iter(m, cg) / cg_run->s_per_iter / 1e9;
  double chol_gflops = flops_per_iter(m, chol) / chol_run->s_per_iter / 1e9;
  double local_entries = nnz / (local_s * cores);

  double lastfm_p = -1, lastfm_pop_p = -1, lastfm_ndcg = -1, lastfm_pop_ndcg = -1, lastfm_s = -1;
  if (std::filesystem::exists(opts.lastfm)) {
    wals::train_job job;
    job.options.data.format = "lastfm";
    job.options.data.path = opts.lastfm;
    job.options.params.dim = 64;
    job.options.workers = opts.threads;
    job.quiet = true;
    auto t = clock::now();
    auto f = wals::evaluate(job, 10);
    if (!f)
      return f.error();
    lastfm_s = compute::seconds_since(t);
    lastfm_p = f->wals.precision;
    lastfm_ndcg = f->wals.ndcg;
    lastfm_pop_p = f->popularity.precision;
    lastfm_pop_ndcg = f->popularity.ndcg;
    std::printf(
      "last.fm-2k (10 iters, dim 64, 20%% held out): wall %.2f s (train %.2f s)  "
      "P@10 %.4f vs popularity %.4f  NDCG@10 %.4f vs %.4f\n",
      lastfm_s, f->train_seconds, lastfm_p, lastfm_pop_p, lastfm_ndcg, lastfm_pop_ndcg);
  } else {
    std::printf("last.fm-2k: %s not found, skipped\n", opts.lastfm.c_str());
  }
  std::printf(
    "peer implicit (CG, d=64): not installable here (no Debian package); the issue "
    "quotes ~1.6M entries/core/s\n");
  std::printf(
    "{\"bench\":\"wals\",\"metrics\":{\"rows\":%llu,\"cols\":%llu,\"nnz\":%llu,"
    "\"dim\":%u,\"threads\":%u,\"cg_s_per_iter\":%.4f,\"chol_s_per_iter\":%.4f,"
    "\"cg_entries_per_core_s\":%.0f,\"chol_entries_per_core_s\":%.0f,"
    "\"cg_gflops\":%.2f,\"chol_gflops\":%.2f,\"local_ref_s_per_iter\":%.4f,"
    "\"local_entries_per_core_s\":%.0f,\"actors_vs_local\":%.3f,"
    "\"lastfm_wall_s\":%.3f,\"lastfm_p_at_10\":%.4f,\"lastfm_pop_p_at_10\":%.4f,"
    "\"lastfm_ndcg_at_10\":%.4f,\"lastfm_pop_ndcg_at_10\":%.4f}}\n",
    static_cast<unsigned long long>(m.rows), static_cast<unsigned long long>(m.cols),
    static_cast<unsigned long long>(m.nnz()), opts.dim, opts.threads, cg_run->s_per_iter,
    chol_run->s_per_iter, cg_entries, chol_entries, cg_gflops, chol_gflops, local_s, local_entries,
    local_s / cg_run->s_per_iter, lastfm_s, lastfm_p, lastfm_pop_p, lastfm_ndcg, lastfm_pop_ndcg);
  return {};
}

} // namespace darcy::apps
