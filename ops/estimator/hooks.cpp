#include "ops/estimator/hooks.hpp"

#include <cmath>
#include <iomanip>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/estimator/estimator.hpp"

namespace darcy::ops::estimator {

caf::error session_run_hook::begin(estimator&, uint64_t) {
  return {};
}

caf::error session_run_hook::before_step(estimator&, uint64_t) {
  return {};
}

caf::expected<hook_action> session_run_hook::after_step(estimator&, const step_result&) {
  return hook_action::go_on;
}

caf::error session_run_hook::end(estimator&, uint64_t) {
  return {};
}

caf::expected<hook_action> stop_at_step::after_step(estimator&, const step_result& r) {
  return r.global_step >= last_ ? hook_action::stop : hook_action::go_on;
}

caf::error stop_after_time::begin(estimator&, uint64_t) {
  start_ = std::chrono::steady_clock::now();
  return {};
}

caf::expected<hook_action> stop_after_time::after_step(estimator&, const step_result&) {
  return std::chrono::steady_clock::now() - start_ >= limit_ ? hook_action::stop
                                                             : hook_action::go_on;
}

caf::expected<hook_action> nan_guard::after_step(estimator&, const step_result& r) {
  if (!std::isfinite(r.loss))
    return make_error(errc::invalid_argument,
                      "estimator: loss is " + std::string{std::isnan(r.loss) ? "NaN" : "infinite"} +
                        " at step " + std::to_string(r.global_step) +
                        "; training stopped, the last checkpoint is the newest good one");
  return hook_action::go_on;
}

caf::error checkpoint_saver::begin(estimator& e, uint64_t) {
  last_save_ = 0;
  if (e.config().model_dir.empty())
    return make_error(errc::invalid_config, "checkpoint_saver: run_config.model_dir is empty");
  return {};
}

caf::expected<hook_action> checkpoint_saver::after_step(estimator& e, const step_result& r) {
  bool by_steps = every_steps_ > 0 && r.global_step % every_steps_ == 0;
  bool by_time = every_seconds_ > 0 && r.seconds - last_save_ >= every_seconds_;
  if (by_steps || by_time) {
    last_save_ = r.seconds;
    if (auto err = e.save_checkpoint())
      return err;
  }
  return hook_action::go_on;
}

caf::error logging_hook::begin(estimator&, uint64_t global_step) {
  window_step_ = global_step;
  window_start_ = 0;
  window_examples_ = 0;
  return {};
}

caf::expected<hook_action> logging_hook::after_step(estimator&, const step_result& r) {
  window_examples_ += r.examples;
  if (every_steps_ == 0 || r.global_step % every_steps_ != 0)
    return hook_action::go_on;
  auto seconds = r.seconds - window_start_;
  rate_ = seconds > 0 ? double(r.global_step - window_step_) / seconds : 0;
  out_ << "step " << r.global_step << "  loss " << std::setprecision(4) << r.loss << "  "
       << std::setprecision(3) << rate_ << " steps/s  "
       << (seconds > 0 ? double(window_examples_) / seconds : 0) << " examples/s\n";
  window_step_ = r.global_step;
  window_start_ = r.seconds;
  window_examples_ = 0;
  return hook_action::go_on;
}

std::ofstream open_summary(const std::string& path) {
  bool torn = false;
  if (std::ifstream last{path, std::ios::ate | std::ios::binary}; last && last.tellg() > 0) {
    last.seekg(-1, std::ios::end);
    torn = last.get() != '\n';
  }
  std::ofstream out{path, std::ios::app};
  if (torn)
    out << '\n';
  return out;
}

caf::error summary_writer::begin(estimator&, uint64_t) {
  out_ = open_summary(path_);
  if (!out_)
    return make_error(errc::io_error, "summary_writer: cannot open " + path_);
  return {};
}

caf::expected<hook_action> summary_writer::after_step(estimator&, const step_result& r) {
  if (every_steps_ > 0 && r.global_step % every_steps_ == 0) {
    out_ << nlohmann::json{{"step", r.global_step}, {"loss", r.loss}, {"seconds", r.seconds}}.dump()
         << '\n';
    out_.flush();
    if (!out_)
      return make_error(errc::io_error, "summary_writer: cannot write " + path_);
  }
  return hook_action::go_on;
}

caf::error early_stopping::begin(estimator&, uint64_t) {
  best_step_ = 0;
  bad_ = 0;
  best_values_.clear();
  if (o_.patience == 0 || o_.every_steps == 0)
    return make_error(errc::invalid_config,
                      "early_stopping: patience and every_steps must be >= 1");
  return {};
}

caf::expected<hook_action> early_stopping::after_step(estimator& e, const step_result& r) {
  if (r.global_step % o_.every_steps != 0)
    return hook_action::go_on;
  auto metrics = e.evaluate(input_);
  if (!metrics)
    return std::move(metrics.error());
  auto it = metrics->find(o_.metric);
  if (it == metrics->end())
    return make_error(errc::invalid_config,
                      "early_stopping: the evaluation has no metric '" + o_.metric + "'");
  auto value = it->second;
  auto gain = o_.higher_is_better ? value - best_ : best_ - value;
  if (best_step_ == 0 || gain > o_.min_delta) {
    best_ = value;
    best_step_ = r.global_step;
    bad_ = 0;
    if (o_.restore_best)
      for (auto* p : e.variables().all())
        best_values_[p->name] = p->value;
    return hook_action::go_on;
  }
  return ++bad_ >= o_.patience ? hook_action::stop : hook_action::go_on;
}

caf::error early_stopping::end(estimator& e, uint64_t) {
  if (!o_.restore_best || best_values_.empty())
    return {};
  for (auto* p : e.variables().all())
    if (auto it = best_values_.find(p->name); it != best_values_.end())
      p->value = it->second;
  return {};
}

} // namespace darcy::ops::estimator
