#include "ops/estimator/distributed/evaluator.hpp"

#include <thread>

#include "messages/error.hpp"
#include "ops/estimator/export/export.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::ops::estimator {

evaluator::evaluator(model_fn fn, run_config cfg, params p, eval_spec spec)
  : estimator_(std::move(fn), std::move(cfg), std::move(p)), spec_(std::move(spec)) {
}

caf::expected<std::optional<evaluation>> evaluator::evaluate_newest() {
  auto manifest = stores::checkpoint_dir{estimator_.config().model_dir}.read_manifest();
  if (!manifest)
    return is(manifest.error(), errc::not_found)
             ? caf::expected<std::optional<evaluation>>{std::nullopt}
             : caf::expected<std::optional<evaluation>>{manifest.error()};
  auto step = static_cast<uint64_t>(manifest->step);
  if (last_ && *last_ >= step)
    return std::nullopt;
  // The first evaluation builds the variables, which restores the newest checkpoint.
  if (auto err = estimator_.build(spec_.input))
    return err;
  if (last_)
    if (auto err = estimator_.reload())
      return err;
  auto metrics = estimator_.evaluate(spec_.input, spec_.steps);
  if (!metrics)
    return std::move(metrics.error());
  auto it = metrics->find(spec_.metric);
  if (it == metrics->end())
    return make_error(errc::invalid_argument,
                      "evaluator: the model has no metric '" + spec_.metric + "'");
  evaluation out{estimator_.global_step(), std::move(*metrics), false, {}};
  auto value = it->second;
  out.improved = !best_ || (spec_.higher_is_better ? value > *best_ : value < *best_);
  if (out.improved) {
    best_ = value;
    if (!spec_.export_dir.empty()) {
      auto version = export_model(estimator_, spec_.export_dir, spec_.input, spec_.keep_exports);
      if (!version)
        return std::move(version.error());
      out.exported = *version;
    }
  }
  last_ = out.global_step;
  return out;
}

caf::expected<std::vector<evaluation>> evaluator::follow(
  uint64_t last_step, std::chrono::milliseconds poll,
  const std::function<void(const evaluation&)>& on_each) {
  std::vector<evaluation> out;
  while (!last_ || *last_ < last_step) {
    auto next = evaluate_newest();
    if (!next)
      return std::move(next.error());
    if (!*next) {
      std::this_thread::sleep_for(poll);
      continue;
    }
    if (on_each)
      on_each(**next);
    out.push_back(std::move(**next));
  }
  return out;
}

} // namespace darcy::ops::estimator
