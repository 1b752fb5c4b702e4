// The language-model job: a model is evaluated after every epoch, and the figures it reports
// are those of the epoch with the lowest validation perplexity; a step limit ends training
// inside an epoch, which is then evaluated as well.
#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "apps/moe/lm_jobs.hpp"
#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tiny_brown.hpp"

namespace darcy::moe {
namespace {

lm_job tiny_job(lm_middle middle, uint32_t epochs, uint64_t max_steps, double dropout) {
  lm_job job;
  job.quiet = true;
  job.model = test::tiny_lm_options(0.05);
  job.model.middle = middle;
  job.model.epochs = epochs;
  job.model.max_steps = max_steps;
  job.model.dropout = dropout;
  return job;
}

TEST(lm_jobs, the_reported_figures_are_those_of_the_best_validation_epoch) {
  test::temp_dir dir{"lm_jobs"};
  test::write_tiny_brown(dir.path());
  auto corpus = load_brown_lm(dir.path(), 2);
  ASSERT_TRUE(corpus) << render(corpus.error());
  struct {
    lm_middle middle;
    uint32_t epochs;
    uint64_t max_steps;
    size_t evaluations;
    double dropout;
  } cases[] = {
    {lm_middle::lstm, 4, 0, 4, 0},
    {lm_middle::moe, 3, 0, 3, 0},
    {lm_middle::moe, 3, 0, 3, 0.3},
    {lm_middle::moe, 3, 2, 1, 0}, // stops inside the first epoch
  };
  for (auto& c : cases) {
    auto r = train_lm(tiny_job(c.middle, c.epochs, c.max_steps, c.dropout), *corpus, "tiny");
    ASSERT_TRUE(r) << render(r.error());
    ASSERT_EQ(r->valid_by_epoch.size(), c.evaluations);
    auto best = std::min_element(r->valid_by_epoch.begin(), r->valid_by_epoch.end());
    EXPECT_EQ(r->best_epoch, best - r->valid_by_epoch.begin() + 1);
    EXPECT_EQ(r->valid_perplexity, *best);
    EXPECT_GT(r->test_perplexity, 1.0);
    EXPECT_GT(r->train_perplexity, 1.0);
    EXPECT_EQ(r->experts_used > 0, c.middle == lm_middle::moe);
    EXPECT_GT(r->tokens_per_second, 0.0);
  }
}

TEST(lm_jobs, the_hierarchical_row_balances_both_levels_with_noisy_gates) {
  lm_options base;
  base.layer.gating = {.experts = 64, .k = 2, .mask = mask_kind::batchwise, .seed = 4};
  auto o = hierarchical_options(base, 16, 8);
  EXPECT_EQ(o.middle, lm_middle::hierarchical);
  for (auto* g : {&o.primary, &o.layer.gating}) {
    EXPECT_EQ(g->mask, mask_kind::noisy_top_k);
    EXPECT_GT(g->importance_weight, 0);
    EXPECT_GT(g->load_weight, 0);
  }
  EXPECT_EQ(o.primary.experts, 16u);
  EXPECT_EQ(o.primary.k, 1u);
  EXPECT_EQ(o.layer.gating.experts, 8u);
  EXPECT_EQ(o.layer.gating.k, 2u);
  EXPECT_NE(o.primary.seed, o.layer.gating.seed);
  // A short run trains with these gates.
  test::temp_dir dir{"lm_jobs_hierarchical"};
  test::write_tiny_brown(dir.path());
  auto corpus = load_brown_lm(dir.path(), 2);
  ASSERT_TRUE(corpus);
  auto job = tiny_job(lm_middle::moe, 2, 0, 0);
  job.model = hierarchical_options(job.model, 2, 4);
  auto r = train_lm(job, *corpus, "tiny-hierarchical");
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_GT(r->experts_used, 0.5);
}

TEST(lm_jobs, a_sweep_with_a_row_that_cannot_be_built_stops_before_it_trains_any) {
  test::temp_dir dir{"lm_jobs_bad_sweep"};
  struct {
    const char* name;
    std::vector<uint32_t> experts;
    uint32_t groups;
  } cases[] = {
    {"a flat row of no experts, after the dense row", {4, 0}, 0},
    {"a hierarchical row of no experts per group", {4}, 2},
  };
  for (auto& c : cases) {
    experiment_job job;
    job.base = tiny_job(lm_middle::moe, 1, 0, 0);
    job.base.corpus = dir.path() + "/never-read";
    job.experts = c.experts;
    job.groups = c.groups;
    job.group_experts = 0;
    job.out_dir = dir.path() + "/out";
    auto err = run_experiment(job);
    EXPECT_TRUE(is(err, errc::invalid_config)) << c.name << ": " << render(err);
    EXPECT_FALSE(std::filesystem::exists(job.out_dir)) << c.name << ": the sweep began";
  }
}

TEST(lm_jobs, a_sweep_row_with_fewer_experts_than_k_uses_them_all) {
  experiment_job job;
  job.base.model.layer.gating = {.experts = 64, .k = 8, .mask = mask_kind::batchwise};
  job.experts = {4, 8, 16, 64};
  job.groups = 16;
  job.group_experts = 16;
  auto rows = experiment_rows(job);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].model.middle, lm_middle::lstm);
  struct {
    uint32_t experts;
    uint32_t k;
  } flat[] = {{4, 4}, {8, 8}, {16, 8}, {64, 8}};
  for (size_t i = 0; i < std::size(flat); ++i) {
    auto& g = rows[i + 1].model.layer.gating;
    EXPECT_EQ(rows[i + 1].model.middle, lm_middle::moe);
    EXPECT_EQ(g.experts, flat[i].experts);
    EXPECT_EQ(g.k, flat[i].k) << flat[i].experts << " experts";
  }
  auto& h = rows[5].model;
  EXPECT_EQ(h.middle, lm_middle::hierarchical);
  EXPECT_EQ(h.primary.experts, 16u);
  EXPECT_EQ(h.layer.gating.k, 8u);
  for (auto& row : rows)
    EXPECT_FALSE(validate(row.model)) << render(validate(row.model));
}

} // namespace
} // namespace darcy::moe
