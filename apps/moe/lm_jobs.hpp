// The jobs behind `darcy moe lm` (train one language model on Brown, report full-softmax
// perplexities) and `darcy moe experiment experts` (the dense baseline and MoE layers of
// growing expert counts at matched compute per word: a TSV and a PNG in the style of the
// paper's Table 3).
#pragma once

#include <string>
#include <vector>

#include <caf/error.hpp>

#include "apps/moe/lm_corpus.hpp"
#include "apps/moe/lm_model.hpp"

namespace darcy::moe {

struct lm_job {
  lm_options model;
  /// The Brown corpus directory.
  std::string corpus;
  uint32_t min_count = 2;
  bool quiet = false;
};

/// The figures of one trained model. The model is evaluated after every epoch; the reported
/// perplexities and expert figures are those of the epoch with the lowest validation perplexity
/// (early stopping on the validation split, never on the test split).
struct lm_result {
  std::string label;
  /// 1-based epoch whose figures are reported.
  uint32_t best_epoch = 0;
  std::vector<double> valid_by_epoch;
  double train_perplexity = 0;
  double valid_perplexity = 0;
  double test_perplexity = 0;
  uint64_t parameters = 0;
  double multiply_adds = 0;
  double tokens_per_second = 0;
  double seconds = 0;
  /// Share of experts that took any test example, and the coefficient of variation of their
  /// test load (0 for the dense baseline).
  double experts_used = 0;
  double load_cv = 0;
  /// Batchwise gates: agreement of threshold and batchwise masks on test batches; else -1.
  double threshold_agreement = -1;
  /// lm_model::moe_device() at the end of training.
  std::string moe_device;
};

/// `base` with a hierarchical middle layer of `groups` × `per_group` experts, gated as in the
/// paper's hierarchical MoE: noisy top-1 of the groups, noisy top-k (base's k) inside each,
/// with the importance and load losses (weight 0.1 each) keeping both levels balanced.
lm_options hierarchical_options(lm_options base, uint32_t groups, uint32_t per_group);

/// Trains one model on `corpus` for job.model.epochs epochs (or job.model.max_steps steps) in
/// an in-process cluster, evaluating it after every epoch; prints progress unless job.quiet.
caf::expected<lm_result> train_lm(const lm_job& job, const lm_corpus& corpus,
                                  const std::string& label);

/// Trains and evaluates one model, printing progress and a JSON line of its figures.
caf::error run_lm(const lm_job& job);

struct experiment_job {
  lm_job base;
  /// Expert counts of the flat MoE rows.
  std::vector<uint32_t> experts = {4, 16, 64, 256};
  /// Groups × experts per group of the hierarchical row (0: none).
  uint32_t groups = 16;
  uint32_t group_experts = 16;
  std::string out_dir;
};

/// The sweep's rows in training order: the dense baseline, the flat MoE rows, the hierarchical
/// row. A flat row with fewer experts than k uses all of them (k = n), as the paper's MoE-4
/// did; its multiply-adds per word are then lower than the other rows'.
std::vector<lm_job> experiment_rows(const experiment_job& job);

/// Trains every row, writes OUT/moe-experts.tsv and OUT/moe-experts.png.
caf::error run_experiment(const experiment_job& job);

} // namespace darcy::moe
