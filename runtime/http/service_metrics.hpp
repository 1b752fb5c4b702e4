// One actor's request metrics in the process registry: per operation, a request counter and a
// latency histogram, plus the actor's mailbox depth, labelled service=<kind> and
// instance=<name>. Its series are removed when it is destroyed, with the actor's state.
//
//   state.metrics.emplace("embedding_shard", "3.42");
//   { runtime::timed_request t{*state.metrics, "lookup", self->mailbox().size()}; ... }
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "runtime/metrics.hpp"

namespace darcy::runtime {

class service_metrics {
public:
  service_metrics(std::string service, std::string instance);
  ~service_metrics();
  service_metrics(const service_metrics&) = delete;
  service_metrics& operator=(const service_metrics&) = delete;

  /// One request of `op` that took `seconds`, with `mailbox_depth` messages waiting behind it.
  /// Called by the owning actor only.
  void record(const std::string& op, double seconds, size_t mailbox_depth);

  const metric_labels& labels() const { return labels_; }

private:
  struct op_series {
    std::shared_ptr<metric_counter> requests;
    std::shared_ptr<metric_histogram> latency;
  };
  metric_labels labels_;
  std::map<std::string, op_series> ops_;
  std::shared_ptr<metric_counter> messages_;
  std::shared_ptr<metric_gauge> mailbox_;
};

/// Times one request from construction to destruction and records it.
class timed_request {
public:
  timed_request(service_metrics& metrics, const char* op, size_t mailbox_depth)
    : metrics_(metrics), op_(op), depth_(mailbox_depth), start_(std::chrono::steady_clock::now()) {}
  ~timed_request();
  timed_request(const timed_request&) = delete;
  timed_request& operator=(const timed_request&) = delete;

private:
  service_metrics& metrics_;
  const char* op_;
  size_t depth_;
  std::chrono::steady_clock::time_point start_;
};

} // namespace darcy::runtime
