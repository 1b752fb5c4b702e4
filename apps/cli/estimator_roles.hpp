// What every `darcy estimator` app's command line shares: the flags of a distributed role
// (DARCY_CONFIG or --task-type and the rest), the refusal of a flag the run would ignore, and
// running this process's role of a distributed job. Internal to apps/cli.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <caf/error.hpp>
#include <nlohmann/json.hpp>

#include "ops/estimator/distributed/run_role.hpp"

namespace darcy::apps {

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
  /// The app's name in errors ("estimator NAME"; empty: the job's), and what a local run trains
  /// for instead of --max-steps.
  std::string app;
  std::string local_length = "--epochs";
};

/// Adds the role flags to `cmd`, filling `r`.
void add_role_flags(CLI::App* cmd, role_flags& r);

/// The first of `options` given on the command line, or nullptr.
const CLI::Option* given(const std::vector<CLI::Option*>& options);

/// Runs this process's role of distributed job `job` when DARCY_CONFIG or --task-type names
/// one, setting exit_code; false for a local run. A flag the run would ignore is one error line.
/// `on_step` and `on_restore` are the chief's (ops::estimator::role_options).
bool run_as_role(const role_flags& flags, const std::string& job, nlohmann::json job_options,
                 const std::string& model_dir, const std::string& summary, size_t threads,
                 int& exit_code, ops::estimator::chief_step_fn on_step = {},
                 ops::estimator::chief_restore_fn on_restore = {});

/// Whether DARCY_CONFIG or --task-type names a role for this process.
bool names_a_role(const role_flags& flags);

} // namespace darcy::apps
