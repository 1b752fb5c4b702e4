#include "apps/moe/moe_jobs.hpp"

#include <chrono>
#include <cmath>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/progress/progress_bar.hpp"
#include "messages/error.hpp"
#include "runtime/cluster/cluster_file.hpp"
#include "runtime/host_port.hpp"

namespace darcy::moe {

namespace {

using clock = std::chrono::steady_clock;

caf::expected<std::unique_ptr<ops::session>> open_session(const std::string& cluster,
                                                          int64_t timeout_ms) {
  ops::session_options o;
  o.name = "moe-driver";
  o.timeout = std::chrono::milliseconds(timeout_ms);
  if (!cluster.empty()) {
    auto seed = runtime::resolve_seed(cluster);
    if (!seed)
      return std::move(seed.error());
    o.seed = *seed;
  }
  return ops::session::open(o);
}

} // namespace

caf::error run_train(const train_job& job) {
  auto s = open_session(job.cluster, job.timeout_ms);
  if (!s)
    return std::move(s.error());
  auto options = job.options;
  options.expert_retry = std::chrono::milliseconds{job.expert_retry_ms};
  auto bar = apps::progress_bar::on_stderr();
  auto start = clock::now();
  auto tokens_per_step = static_cast<double>(options.replicas) * options.batch;
  uint64_t stepped = 0;
  // Steps trained again after restores: each restore goes back from the step after the last
  // one that completed to its checkpoint's.
  uint64_t last_step = 0, replayed = 0;
  options.on_step = [&](uint64_t step, double loss) {
    ++stepped;
    last_step = step;
    if (job.quiet)
      return;
    auto seconds = std::chrono::duration<double>(clock::now() - start).count();
    auto rate = stepped * tokens_per_step / std::max(seconds, 1e-9);
    auto left = static_cast<double>(options.steps - step - 1) * tokens_per_step / rate;
    bar.update(static_cast<double>(step + 1) / options.steps,
               "step " + std::to_string(step + 1) + "  loss " + std::to_string(loss) + "  " +
                 apps::format_rate(rate) + " tokens/s",
               left);
  };
  options.on_restore = [&](int64_t step, const std::string& cause) {
    if (stepped > 0 && last_step + 1 > static_cast<uint64_t>(step))
      replayed += last_step + 1 - static_cast<uint64_t>(step);
    std::cerr << "\nmoe train: restored every expert from the checkpoint of step " << step << " ("
              << cause << ")" << std::endl;
  };
  auto result = ops::train_moe(**s, options);
  if (!job.quiet)
    bar.finish();
  if (!result)
    return std::move(result.error());
  double seconds = std::chrono::duration<double>(clock::now() - start).count();
  double examples = 0;
  for (auto b : result->expert_batch)
    examples += b;
  auto experts = static_cast<double>(options.layer.gating.experts);
  // How unevenly the last step's examples spread over the experts: CV of their batches.
  double spread = 0;
  for (auto b : result->expert_batch)
    spread += (b - examples / experts) * (b - examples / experts);
  auto cv = examples > 0 ? std::sqrt(spread / experts) / (examples / experts) : 0.0;
  nlohmann::json out{
    {"steps", result->losses.size()},
    {"first_loss", result->losses.front()},
    {"final_loss", result->losses.back()},
    {"restores", result->restores},
    {"replayed_steps", replayed},
    {"expert_batch_mean", examples / experts},
    {"expert_batch_expected", options.layer.gating.k * tokens_per_step / experts},
    {"expert_batch_cv", cv},
    {"expert_nodes", result->expert_nodes},
    {"tokens_per_second", stepped * tokens_per_step / seconds},
  };
  std::cout << out.dump() << std::endl;
  return {};
}

} // namespace darcy::moe
