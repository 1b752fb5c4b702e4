// `darcy moe train`: a MoE layer whose experts are supervised actors on the cluster's nodes,
// checkpointed and restored through node failures.
#include "apps/cli/commands.hpp"
#include "apps/moe/moe_jobs.hpp"
#include "messages/error.hpp"

namespace darcy::apps {

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
  train->add_option("--cluster", job->cluster, "Seed HOST:PORT (default: in-process)");
  train->add_option("--timeout-ms", job->timeout_ms, "Cluster request timeout");
  train->add_flag("--quiet", job->quiet, "No progress bar");
  train->callback([job, &exit_code] {
    if (auto err = moe::run_train(*job))
      exit_code = fail("moe train: " + render(err));
  });
}

} // namespace darcy::apps
