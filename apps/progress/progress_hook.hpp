// A progress bar for Estimator::train: the step, the smoothed loss, steps/s and the ETA to
// `last_step`, on stderr.
//
//   e.train(input, 10000, {std::make_shared<progress_hook>(10000)});
#pragma once

#include <cstdint>
#include <iosfwd>

#include "apps/progress/progress_bar.hpp"
#include "ops/estimator/hooks.hpp"

namespace darcy::apps {

class progress_hook final : public ops::estimator::session_run_hook {
public:
  explicit progress_hook(uint64_t last_step) : last_step_(last_step) {}
  /// A non-interactive bar on `out` (a line per 10%).
  progress_hook(uint64_t last_step, std::ostream& out) : last_step_(last_step), bar_(out, false) {}
  caf::error begin(ops::estimator::estimator& e, uint64_t global_step) override;
  caf::expected<ops::estimator::hook_action> after_step(
    ops::estimator::estimator& e, const ops::estimator::step_result& r) override;
  caf::error end(ops::estimator::estimator& e, uint64_t global_step) override;

private:
  uint64_t last_step_;
  uint64_t first_step_ = 0;
  double smoothed_ = 0;
  progress_bar bar_ = progress_bar::on_stderr();
};

} // namespace darcy::apps
