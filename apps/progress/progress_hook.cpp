#include "apps/progress/progress_hook.hpp"

#include <iomanip>
#include <sstream>

namespace darcy::apps {

caf::error progress_hook::begin(ops::estimator::estimator&, uint64_t global_step) {
  first_step_ = global_step;
  smoothed_ = 0;
  return {};
}

caf::expected<ops::estimator::hook_action> progress_hook::after_step(
  ops::estimator::estimator&, const ops::estimator::step_result& r) {
  auto done = r.global_step - first_step_;
  smoothed_ = done == 1 ? r.loss : 0.98 * smoothed_ + 0.02 * r.loss;
  auto total = last_step_ > first_step_ ? last_step_ - first_step_ : 1;
  if (done % 20 == 0 || r.global_step >= last_step_) {
    auto rate = r.seconds > 0 ? double(done) / r.seconds : 0;
    std::ostringstream figures;
    figures << "step " << r.global_step << "/" << last_step_ << "  loss " << std::fixed
            << std::setprecision(4) << smoothed_ << "  " << format_rate(rate) << " steps/s";
    bar_.update(std::min(1.0, double(done) / double(total)), figures.str(),
                rate > 0 ? double(total - std::min(done, total)) / rate : 0);
  }
  return ops::estimator::hook_action::go_on;
}

caf::error progress_hook::end(ops::estimator::estimator&, uint64_t) {
  bar_.finish();
  return {};
}

} // namespace darcy::apps
