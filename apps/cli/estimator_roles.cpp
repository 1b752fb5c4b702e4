#include "apps/cli/estimator_roles.hpp"

#include <cstdlib>

#include "apps/cli/commands.hpp"
#include "apps/estimator/estimator_jobs.hpp"
#include "messages/error.hpp"
#include "ops/estimator/distributed/run_role.hpp"

namespace darcy::apps {

namespace {

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
    auto hint = o->get_name() == "--max-steps" ? "; a local run trains for " + r.local_length : "";
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
  if (!names_a_role(r))
    return result{std::nullopt};
  auto role = r.task_type.empty()
                ? ops::estimator::parse_role_config(std::getenv("DARCY_CONFIG"))
                : ops::estimator::parse_role_config(r.cluster_spec, r.task_type, r.task_index);
  return role ? result{std::move(*role)} : result{std::move(role.error())};
}

} // namespace

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

bool names_a_role(const role_flags& flags) {
  auto* env = std::getenv("DARCY_CONFIG");
  return !flags.task_type.empty() || (env && *env);
}

const CLI::Option* given(const std::vector<CLI::Option*>& options) {
  for (auto* o : options)
    if (o->count() > 0)
      return o;
  return nullptr;
}

bool run_as_role(const role_flags& flags, const std::string& job, nlohmann::json job_options,
                 const std::string& model_dir, const std::string& summary, size_t threads,
                 int& exit_code, ops::estimator::chief_step_fn on_step,
                 ops::estimator::chief_restore_fn on_restore) {
  auto what = "estimator " + (flags.app.empty() ? job : flags.app);
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
  r.on_step = std::move(on_step);
  r.on_restore = std::move(on_restore);
  if (!flags.node_config.empty())
    if (auto err = runtime::load_node_config(flags.node_config, r.node)) {
      exit_code = fail(what + ": " + render(err));
      return true;
    }
  auto err = ops::estimator::run_role(r, std::cout);
  exit_code = err ? fail(what + " (" + r.role.node_name() + "): " + render(err)) : 0;
  return true;
}

} // namespace darcy::apps
