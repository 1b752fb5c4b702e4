// What the threads of `darcy-bench online --cluster` share, and the report it prints from it
// (online_cluster_report.cpp): the chief's sync lines, the client's answers and the rows it
// asked. Internal to apps/bench/.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>

#include "apps/bench/online_bench.hpp"
#include "apps/bench/online_common.hpp"
#include "ops/estimator/input.hpp"

namespace darcy::apps::online {

/// The job's shape.
inline constexpr size_t workers = 2, parameter_servers = 2, serving_nodes = 4, serving_replicas = 2;
inline constexpr const char* served_model = "ctr";

/// One sync line of the chief's, its times on this process's steady clock.
struct sync_line {
  int64_t step = 0;
  steady::time_point cut;
  bool full = false;
  uint64_t bytes = 0;
  unsigned status = 0;
  uint64_t push_bytes = 0;
  bool whole_chain = false;
  /// The tables' rows then.
  uint64_t rows = 0;
  std::optional<std::pair<steady::time_point, steady::time_point>> push;
};

/// A time on the system clock in ms since the epoch (another process's), on this steady clock.
inline steady::time_point steady_of(int64_t unix_ms) {
  auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  return steady::now() - std::chrono::milliseconds{now_ms - unix_ms};
}

/// The rows the client asked from one pool, and what serving answered.
struct pool {
  std::shared_ptr<ops::estimator::example_table> table;
  struct asked {
    uint32_t row = 0;
    float score = 0;
    steady::time_point answered;
  };
  std::vector<asked> served;
};

/// Everything the threads share.
struct cluster_state {
  std::mutex mutex;
  std::vector<sync_line> syncs;
  bool exported = false;
  /// The global step of the chief's export, the frozen peer.
  int64_t exported_at = -1;
  bool chief_ended = false;
  std::vector<answer_record> answers;
  /// (answered, the sync step it came from) of each whole answer, in order.
  std::vector<std::pair<steady::time_point, int64_t>> answer_steps;
  std::vector<std::shared_ptr<pool>> pools;
  /// Copies of the served model in service once the run ended (GET /v1/models/NAME).
  uint64_t replicas_serving_at_end = 0;
  std::atomic<bool> stop{false};
};

/// Prints the run's figures: the metrics the issue names, then the rest; a file of each
/// answer's second and sync step under `dir`. The frozen export's errors.
caf::error report_cluster_run(const online_bench_options& o, const std::string& dir,
                              const cluster_state& st, steady::time_point started,
                              steady::time_point finished, double local_examples_per_s);

} // namespace darcy::apps::online
