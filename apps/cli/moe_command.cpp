// `darcy moe train`: a MoE layer whose experts are supervised actors on the cluster's nodes,
// checkpointed and restored through node failures. `darcy moe lm` and `darcy moe experiment
// experts`: the paper's language model on Brown, and its sweep over expert counts.
#include "apps/cli/commands.hpp"
#include "apps/moe/lm_jobs.hpp"
#include "apps/moe/moe_jobs.hpp"
#include "messages/error.hpp"

namespace darcy::apps {

namespace {

/// The options of one language model, shared by `lm` and `experiment experts`.
void add_lm_options(CLI::App* cmd, moe::lm_job& job) {
  auto& o = job.model;
  cmd->add_option("--corpus", job.corpus, "Brown corpus directory (make demo fetches it)");
  cmd->add_option("--min-count", job.min_count,
                  "Output vocabulary: training words seen this often");
  cmd->add_option("--dim", o.dim, "Width d of embeddings, LSTMs and experts")
    ->check(CLI::Range(1, 4096));
  add_choice<expert_kind>(cmd, "--expert", o.layer.expert,
                          {{"linear", expert_kind::linear}, {"ffn", expert_kind::ffn}},
                          "Expert: linear d x d, or d -> hidden -> d with a ReLU");
  cmd->add_option("--hidden", o.layer.hidden, "Hidden width of an ffn expert (default 2d)");
  cmd->add_option("-k", o.layer.gating.k,
                  "Experts per word (default 8 linear, 2 ffn: 8d² multiply-adds, as the dense "
                  "row; hierarchical: per group; a sweep's row of fewer experts uses them all)");
  add_choice<mask_kind>(cmd, "--mask", o.layer.gating.mask,
                        {{"top-k", mask_kind::top_k}, {"batchwise", mask_kind::batchwise}},
                        "Sparse gating mask (batchwise: thresholds at inference)");
  cmd->add_option("--importance-weight", o.layer.gating.importance_weight, "CV² importance loss");
  cmd->add_option("--batch", o.batch, "Sequences per batch")->check(CLI::Range(1, 4096));
  cmd->add_option("--unroll", o.unroll, "Time steps per window")->check(CLI::Range(1, 1024));
  cmd->add_option("--sampled", o.sampled, "Sampled-softmax negatives per batch");
  cmd->add_option("--epochs", o.epochs, "Passes over the training documents");
  cmd->add_option("--max-steps", o.max_steps, "Stop after this many steps (0: the epochs)");
  cmd->add_option("--learning-rate", o.learning_rate, "Adam learning rate of the dense layers");
  cmd->add_option("--embedding-learning-rate", o.embedding_learning_rate,
                  "Adam learning rate of the embedding rows (in the service)");
  cmd->add_option("--threads", o.threads, "Threads of the MoE layer")->check(CLI::Range(1, 256));
  cmd->add_option("--dropout", o.dropout,
                  "Dropout rate on the input, the middle layer's output and the last output");
  cmd->add_option("--seed", o.seed, "Seed of the weights and the sampler");
  cmd->add_flag("--quiet", job.quiet, "No progress bar");
}

/// Keeps an LM's MoE layer at the dense row's 8d² multiply-adds per word when -k or --hidden
/// were not given: linear d × d experts at k = 8 (the default), FFN experts d → 2d → d at k = 2.
void match_compute(const CLI::App* cmd, moe::lm_options& o) {
  if (o.layer.expert != expert_kind::ffn)
    return;
  if (cmd->count("-k") == 0)
    o.layer.gating.k = 2;
  if (cmd->count("--hidden") == 0)
    o.layer.hidden = 2 * o.dim;
}

} // namespace

void add_moe_command(CLI::App& app, int& exit_code) {
  auto moe_cmd = app.add_subcommand("moe", "Sparsely-gated mixture of experts");
  moe_cmd->require_subcommand(1);
  auto job = std::make_shared<moe::train_job>();
  auto& o = job->options;
  o.layer.dim = 32;
  o.layer.gating = {.experts = 8, .k = 2, .mask = mask_kind::batchwise, .balance_weight = 0.01};
  o.learning_rate = 0.03;
  auto train = moe_cmd->add_subcommand(
    "train", "Train a MoE layer with expert actors on the cluster, restoring through failures");
  train->add_option("--dim", o.layer.dim, "Model width d")->check(CLI::Range(1, 1 << 14));
  train->add_option("--experts", o.layer.gating.experts, "Experts n")->check(CLI::Range(1, 4096));
  train->add_option("-k", o.layer.gating.k, "Experts per example");
  add_choice<mask_kind>(train, "--mask", o.layer.gating.mask,
                        {{"top-k", mask_kind::top_k}, {"batchwise", mask_kind::batchwise}},
                        "Sparse gating mask");
  train->add_option("--balance-weight", o.layer.gating.balance_weight, "L_balance weight");
  add_choice<balance_input>(
    train, "--balance-on", o.layer.gating.balance_on,
    {{"gates", balance_input::gates}, {"softmax", balance_input::softmax}},
    "L_balance over the sparse gates G (the paper's) or the softmax G_sigma");
  train->add_option("--replicas", o.replicas, "Data-parallel replicas combined per step");
  train->add_option("--batch", o.batch, "Rows per replica and step");
  train->add_option("--steps", o.steps, "Steps");
  train->add_option("--learning-rate", o.learning_rate, "Adam learning rate");
  train->add_option("--checkpoint", o.checkpoint_dir, "Checkpoint directory")->required();
  train->add_option("--checkpoint-every", o.checkpoint_every, "Steps between checkpoints");
  train->add_option("--seed", o.seed, "Seed of the teacher and the batches");
  train->add_option("--expert-nodes", o.expert_nodes, "Nodes that run experts (default: all)")
    ->delimiter(',');
  train->add_option("--prefix", o.prefix, "Service-name prefix of the experts");
  train
    ->add_option("--expert-retry-ms", job->expert_retry_ms,
                 "On a cluster, ask an expert again when it has not answered within this "
                 "(then 2x, 3x); keep it above an expert's slowest step")
    ->check(CLI::Range(1, 3600000));
  train->add_option("--cluster", job->cluster,
                    "Seed HOST:PORT, or a cluster file or directory (default: in-process)");
  train->add_option("--timeout-ms", job->timeout_ms, "Cluster request timeout");
  train->add_flag("--quiet", job->quiet, "No progress bar");
  train->callback([job, &exit_code] {
    if (auto err = moe::run_train(*job))
      exit_code = fail("moe train", err);
  });

  // The language model: the paper's linear d x d experts at k = 8 cost 8d² multiply-adds per
  // word, what the dense baseline's third LSTM costs, so the rows are matched in compute.
  auto lm = std::make_shared<moe::lm_job>();
  lm->corpus = "build/data/brown";
  lm->model.layer.expert = expert_kind::linear;
  lm->model.layer.hidden = 2 * lm->model.dim;
  lm->model.layer.gating = {.experts = 64, .k = 8, .mask = mask_kind::batchwise, .seed = 1};
  auto lm_cmd = moe_cmd->add_subcommand(
    "lm", "Train the MoE language model (LSTM, MoE, LSTM) on Brown; full-softmax perplexity");
  add_lm_options(lm_cmd, *lm);
  auto middle = std::make_shared<std::string>("moe");
  lm_cmd
    ->add_option("--middle", *middle,
                 "lstm (the dense baseline; the MoE flags do not apply), moe or hierarchical")
    ->check(CLI::IsMember({"lstm", "moe", "hierarchical"}));
  lm_cmd->add_option("--experts", lm->model.layer.gating.experts,
                     "Experts (hierarchical: per group)");
  lm_cmd->add_option("--groups", lm->model.primary.experts, "Hierarchical: groups (k = 1 of them)");
  lm_cmd->add_flag("--gpu", lm->model.gpu,
                   "Train the MoE layer on CUDA device 0 (fails without one)");
  lm_cmd->callback([lm, middle, lm_cmd, &exit_code] {
    if (*middle == "moe" && lm_cmd->count("--groups") > 0) {
      exit_code = fail("moe lm", make_error(errc::invalid_config,
                                            "--groups applies to --middle hierarchical only"));
      return;
    }
    match_compute(lm_cmd, lm->model);
    lm->model.middle = *middle == "lstm" ? moe::lm_middle::lstm : moe::lm_middle::moe;
    if (*middle == "hierarchical")
      lm->model = moe::hierarchical_options(lm->model, lm->model.primary.experts,
                                            lm->model.layer.gating.experts);
    if (auto err = moe::run_lm(*lm))
      exit_code = fail("moe lm", err);
  });

  auto exp = std::make_shared<moe::experiment_job>();
  exp->base = *lm;
  // The sweep's rows train with the CV² importance loss unless --importance-weight says otherwise.
  exp->base.model.layer.gating.importance_weight = 0.1;
  exp->out_dir = "moe-experiment";
  auto exp_cmd = moe_cmd->add_subcommand("experiment", "Experiments of the MoE language model");
  exp_cmd->require_subcommand(1);
  auto experts_cmd = exp_cmd->add_subcommand(
    "experts", "Dense baseline and MoE of 4 to 256 experts at matched compute: TSV and PNG");
  add_lm_options(experts_cmd, exp->base);
  experts_cmd->add_option("--expert-counts", exp->experts, "Expert counts of the flat rows")
    ->delimiter(',');
  experts_cmd->add_option("--groups", exp->groups, "Hierarchical row: groups (0: no such row)");
  experts_cmd->add_option("--group-experts", exp->group_experts,
                          "Hierarchical row: experts per group");
  experts_cmd->add_option("--out", exp->out_dir, "Directory of the TSV and the PNG");
  experts_cmd->callback([exp, experts_cmd, &exit_code] {
    match_compute(experts_cmd, exp->base.model);
    if (auto err = moe::run_experiment(*exp))
      exit_code = fail("moe experiment experts", err);
  });
}

} // namespace darcy::apps
