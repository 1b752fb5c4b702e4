#include "runtime/http/service_metrics.hpp"

namespace darcy::runtime {

namespace {

const char* requests_name = "darcy_service_requests_total";
const char* latency_name = "darcy_service_request_seconds";
const char* messages_name = "darcy_messages_total";
const char* mailbox_name = "darcy_mailbox_depth";

metric_labels with_op(metric_labels labels, const std::string& op) {
  labels.emplace_back("op", op);
  return labels;
}

} // namespace

service_metrics::service_metrics(std::string service, std::string instance)
  : labels_{{"service", std::move(service)}, {"instance", std::move(instance)}} {
  auto& registry = process_metrics();
  messages_ = registry.counter(messages_name, "Requests handled by the service's actor", labels_);
  mailbox_ = registry.gauge(mailbox_name,
                            "Messages waiting in the actor's mailbox at its last request", labels_);
}

service_metrics::~service_metrics() {
  auto& registry = process_metrics();
  for (auto& [op, series] : ops_) {
    registry.remove(requests_name, with_op(labels_, op));
    registry.remove(latency_name, with_op(labels_, op));
  }
  registry.remove(messages_name, labels_);
  registry.remove(mailbox_name, labels_);
}

void service_metrics::record(const std::string& op, double seconds, size_t mailbox_depth) {
  auto it = ops_.find(op);
  if (it == ops_.end()) {
    auto& registry = process_metrics();
    auto labels = with_op(labels_, op);
    it = ops_
           .emplace(op, op_series{registry.counter(requests_name, "Requests by operation", labels),
                                  registry.histogram(
                                    latency_name, "Time to handle a request, in seconds", labels)})
           .first;
  }
  it->second.requests->add();
  it->second.latency->observe(seconds);
  messages_->add();
  mailbox_->set(static_cast<double>(mailbox_depth));
}

timed_request::~timed_request() {
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
  metrics_.record(op_, took.count(), depth_);
}

} // namespace darcy::runtime
