// `darcy wals train | eval | recommend`: distributed weighted ALS on implicit feedback, with a
// run-token chief, workers in process or on the cluster's nodes, and consistent checkpoints.
#include <memory>

#include "apps/cli/commands.hpp"
#include "apps/cli/export_index_options.hpp"
#include "apps/wals/export_job.hpp"
#include "apps/wals/wals_jobs.hpp"
#include "messages/error.hpp"

namespace darcy::apps {

namespace {

using namespace darcy::wals;

void add_train_flags(CLI::App* cmd, wals::train_job& job) {
  auto& o = job.options;
  auto& d = o.data;
  auto& p = o.params;
  cmd->add_option("--data", d.path,
                  "Triples file: row, column, value per line (csr: the directory of its sides)");
  cmd
    ->add_option("--format", d.format,
                 "Triples format (lastfm: tab-separated, no header), or csr (rows.csr and "
                 "cols.csr, as darcy-bench wals --scale writes them)")
    ->check(CLI::IsMember({"lastfm", "tsv", "csv", "csr"}))
    ->default_str("lastfm");
  cmd->add_option("--synthetic-rows", d.rows, "Synthetic matrix instead of --data: rows");
  cmd->add_option("--synthetic-cols", d.cols, "Synthetic matrix: columns");
  cmd->add_option("--synthetic-nnz", d.nnz, "Synthetic matrix: about this many entries");
  cmd->add_option("--row-features", d.row_features,
                  "row<TAB>feature lines (user_friends.dat): extra columns of the rows");
  cmd->add_option("--col-features", d.col_features,
                  "column<TAB>feature lines: extra rows of the columns");
  cmd->add_option("--feature-value", d.feature_value, "The value of every feature's entries")
    ->capture_default_str();
  cmd->add_flag("--skip-malformed", d.skip_malformed, "Skip and count malformed lines");
  cmd->add_option("--dim", p.dim, "Factor dimension");
  cmd->add_option("--iters", o.sweeps, "Sweeps (rows then columns)");
  cmd->add_option("--alpha", p.alpha, "Observed weight 1 + alpha * f(value)");
  add_choice<wals_weight_fn>(
    cmd, "--weight", p.weight_fn,
    {{"identity", wals_weight_fn::identity}, {"log1p", wals_weight_fn::log1p}},
    "f in the observed weight 1 + alpha * f(value)");
  cmd->add_option("--lambda", p.lambda, "L2 regularisation");
  cmd->add_option("--sigma", p.sigma, "Weight of unobserved entries");
  add_choice<wals_solver>(cmd, "--solver", p.solver,
                          {{"cg", wals_solver::cg}, {"cholesky", wals_solver::cholesky}},
                          "Row solver: warm-started conjugate gradient, or exact");
  cmd->add_option("--cg-steps", p.cg_steps, "Conjugate-gradient steps per row");
  cmd->add_option("--seed", p.seed, "Seed of the initial factors");
  cmd->add_option("--workers", o.workers, "WALS workers (threads in process, or on the nodes)");
  cmd->add_option("--shards", o.shards, "Factor shards (0: one per worker, at most 8)");
  cmd->add_option("--blocks-per-worker", o.blocks_per_worker, "Blocks per side and worker");
  cmd->add_option("--view-chunk-rows", o.view_chunk_rows,
                  "Factor rows in one message between processes (0: 16 MiB worth)");
  cmd->add_option("--checkpoint", o.checkpoint_dir,
                  "Checkpoint directory (default OUT/checkpoints)");
  cmd->add_option("--token-timeout-ms", o.token_timeout_ms, "Re-issue a token after this long");
  cmd->add_option("--token-attempts", o.max_token_attempts,
                  "Fail the run when one block was issued this often without a commit");
  cmd->add_option("--cluster", job.cluster,
                  "Seed HOST:PORT, or a cluster file or directory (default: in-process)");
  cmd->add_option("--chief-node", o.chief_node, "Preferred node of the chief");
  cmd->add_option("--worker-nodes", o.worker_nodes, "Nodes that run workers (default: all)")
    ->delimiter(',');
  cmd->add_option("--timeout-ms", job.timeout_ms, "Cluster request timeout");
  cmd->add_flag("--quiet", job.quiet, "No progress bar");
  auto faults = "Fault injection (tests)";
  cmd
    ->add_option("--fault-drop-block", o.faults.drop_block,
                 "The first worker given this rows block goes silent after half its rows")
    ->group(faults);
  cmd->add_option("--fault-drop-sweep", o.faults.drop_sweep, "... in this sweep")->group(faults);
  cmd
    ->add_option("--fault-stall-sweep", o.faults.stall_sweep,
                 "The first chief stops issuing tokens when this sweep's cols phase starts")
    ->group(faults);
  cmd->add_option("--fault-pid-file", o.faults.pid_file, "A fired fault writes its pid here")
    ->group(faults);
  cmd
    ->add_option("--fault-fail-block", o.faults.fail_block,
                 "Every worker abandons every issue of this rows block")
    ->group(faults);
}

caf::error check_source(const wals::train_job& job) {
  auto& d = job.options.data;
  bool synthetic = d.rows > 0 || d.cols > 0 || d.nnz > 0;
  if (synthetic == !d.path.empty())
    return make_error(errc::invalid_argument,
                      "give --data FILE or all of --synthetic-rows/-cols/-nnz, not both");
  return {};
}

} // namespace

void add_wals_command(CLI::App& app, int& exit_code) {
  auto wals = app.add_subcommand("wals", "Distributed weighted ALS on implicit feedback");
  wals->require_subcommand(1);
  auto report = [&exit_code](caf::error err) { exit_code = err ? fail(render(err)) : 0; };
  auto prepare = [](wals::train_job& job) -> caf::error {
    if (auto err = check_source(job))
      return err;
    auto& d = job.options.data;
    if (d.path.empty())
      d.format.clear();
    else if (d.format.empty())
      d.format = "lastfm";
    return {};
  };

  auto job = std::make_shared<wals::train_job>();
  auto train_cmd = wals->add_subcommand("train", "Train factors and write a model");
  add_train_flags(train_cmd, *job);
  train_cmd->add_option("--out", job->out, "Model directory")->required();
  train_cmd->callback([job, report, prepare] {
    if (auto err = prepare(*job))
      return report(err);
    report(run_train(*job));
  });

  auto eval = std::make_shared<wals::eval_job>();
  auto eval_cmd = wals->add_subcommand("eval", "Hold out items per user; WALS vs popularity");
  add_train_flags(eval_cmd, eval->train);
  eval_cmd->add_option("--holdout", eval->train.options.data.holdout,
                       "Fraction of each user's items held out");
  eval_cmd->add_option("--holdout-seed", eval->train.options.data.holdout_seed, "Split seed");
  eval_cmd->add_option("-k", eval->k, "Cut-off of the metrics");
  eval_cmd->add_flag("--json", eval->json, "Also print one JSON line");
  eval_cmd->callback([eval, report, prepare] {
    if (auto err = prepare(eval->train))
      return report(err);
    report(run_eval(*eval));
  });

  auto rec = std::make_shared<wals::recommend_job>();
  auto rec_cmd = wals->add_subcommand("recommend", "Top items for a user, or for new items");
  rec_cmd->add_option("--model", rec->model, "Model directory from wals train")->required();
  rec_cmd->add_option("--user", rec->user, "A user of the model");
  rec_cmd->add_option("--items", rec->items, "Cold start: items of a new user")->delimiter(',');
  rec_cmd->add_option("--values", rec->values, "Cold start: a value per item")->delimiter(',');
  rec_cmd->add_option("-k", rec->k, "How many");
  rec_cmd->add_option("--names", rec->names, "id<TAB>name file (artists.dat)");
  rec_cmd->callback([rec, report] { report(run_recommend(*rec)); });

  auto exp = std::make_shared<wals::export_job>();
  auto exp_cmd =
    wals->add_subcommand("export", "Write a model as a new version of a serving export");
  exp_cmd->add_option("--model", exp->model, "Model directory from wals train")->required();
  exp_cmd->add_option("--out", exp->out, "Export directory EXPORTS/<name>")->required();
  exp_cmd->add_option("--shards", exp->shards, "Shard sub-models")->check(CLI::Range(1, 1024));
  exp_cmd->add_option("--keep", exp->keep, "Versions kept, the new one included")
    ->check(CLI::Range(1, 1000));
  exp_cmd->add_option("--lists", exp->index.lists, "Inverted lists per shard (0: 2 sqrt(items))");
  exp_cmd->add_option("--anisotropic-threshold", exp->index.anisotropic_threshold,
                      "ScaNN's T for the anisotropic loss (0: plain squared error)");
  add_export_index_options(exp_cmd, exp->kind, exp->graph);
  exp_cmd->add_option("--threads", exp->index.threads, "Threads building the indexes")
    ->check(CLI::Range(1, 256));
  exp_cmd
    ->add_option("--fault-stall-before-commit", exp->stall_before_commit,
                 "Write the pid to this file before the manifest and wait to be killed")
    ->group("Fault injection (tests)");
  exp_cmd->callback([exp, report] { report(run_export(*exp)); });
}

} // namespace darcy::apps
