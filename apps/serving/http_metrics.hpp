// The front end's metrics in the Prometheus text format (version 0.0.4): HTTP requests by
// model, route and status code, their latency histograms, denials by cause, and what the roots
// report (each shard's health, answers and round-trip histogram; per-principal counters).
// Thread-safe: every HTTP thread records into one instance.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "messages/serving/serving_values.hpp"

namespace darcy::serving {

class http_metrics {
public:
  /// One answered request. `model` is empty for routes outside a model (and for unknown
  /// models, so that a client cannot grow the label set).
  void record(const std::string& model, const std::string& route, unsigned code, double ms);

  /// The exposition text, with the roots' statuses.
  std::string render(const std::vector<model_status>& models) const;

private:
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, unsigned>, uint64_t> requests_;
  std::map<std::pair<std::string, std::string>, latency_histogram> latency_;
};

} // namespace darcy::serving
