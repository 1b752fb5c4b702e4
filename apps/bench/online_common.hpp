// What `darcy-bench online` and its --cluster mode share: the logs of the processes they start,
// the figures of the answers a client got while syncs were applied, and JSON numbers.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <nlohmann/json.hpp>

#include "runtime/process/process.hpp"

namespace darcy::apps::online {

using steady = std::chrono::steady_clock;

/// `argv` with its stderr appended to `log` (and its stdout too when `both`).
std::vector<std::string> logged(const std::string& log, const std::vector<std::string>& argv,
                                bool both = false);

/// The last 4,000 characters of a log, for an error.
std::string tail_of(const std::string& path);

/// compute::percentile, or NaN (a JSON null) for no samples.
double percentile(const std::vector<double>& v, double q);

/// The ROC AUC of scores `p` against labels `y`; NaN for none or one class.
double auc_of(const std::vector<double>& p, const std::vector<double>& y);

/// `x`, or null when it is not finite.
nlohmann::json number(double x);

/// One :predict a client sent.
struct answer_record {
  steady::time_point sent;
  steady::time_point answered;
  bool ok = false;
};

/// The answers' latencies split by whether a push to serving was being applied meanwhile. The
/// first push restores the whole chain, once: the answers that overlap it count in neither.
struct sync_latency {
  std::vector<double> during_ms, without_ms;
  uint64_t failed = 0;
  uint64_t during_restore = 0;
};
sync_latency split_by_syncs(
  const std::vector<answer_record>& answers,
  const std::vector<std::pair<steady::time_point, steady::time_point>>& pushes);

/// Waits until the `darcy serve` at `at` lists `model` with its embeddings on shards (asked
/// with bearer `token`, none when empty), after `serve` printed that it listens; its log's tail
/// in the error.
caf::error wait_served(const runtime::host_port& at, const std::string& model,
                       runtime::child_process& serve, const std::string& log,
                       const std::string& token = "");

} // namespace darcy::apps::online
