// The distributed half of `darcy-bench estimator`: the brown-genre Wide & Deep job run as
// real processes on 127.0.0.1 (a chief, its ps tasks and a number of workers), each run's
// global steps/s as its chief measures it, for the ratios to one worker (`scaling_2_workers`,
// the paper's Fig. 3).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <caf/expected.hpp>

namespace darcy::apps {

struct scaling_options {
  /// The Brown corpus directory.
  std::string corpus;
  /// Global steps of each run.
  uint64_t steps = 3000;
  /// Scheduler and product threads of every role.
  size_t threads = 2;
  /// ps tasks; must be >= 1.
  size_t ps = 1;
};

struct scaling_run {
  /// Global steps/s, as the chief measures them.
  double steps_per_second = 0;
  /// Milliseconds per step in each phase (input, pull, forward, backward, update, hooks),
  /// the mean over the workers that reported theirs; empty when none did.
  std::map<std::string, double> worker_step_ms;
};

/// One run with `workers` workers and `o.ps` ps tasks; errc::timeout or the chief's error (with its
/// stderr) when the job does not finish.
caf::expected<scaling_run> distributed_run(const scaling_options& o, size_t workers);

} // namespace darcy::apps
