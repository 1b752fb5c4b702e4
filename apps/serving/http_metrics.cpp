#include "apps/serving/http_metrics.hpp"

#include <sstream>

namespace darcy::serving {

namespace {

std::string escape(const std::string& x) {
  std::string out;
  for (auto c : x) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// Writes the _bucket, _sum and _count lines of `h` in seconds.
void write_histogram(std::ostream& out, const std::string& name, const std::string& labels,
                     const latency_histogram& h) {
  uint64_t cumulative = 0;
  for (size_t b = 0; b < h.counts.size(); ++b) {
    cumulative += h.counts[b];
    out << name << "_bucket{" << labels << ",le=\"";
    if (b < std::size(latency_histogram::bounds))
      out << latency_histogram::bounds[b] / 1000;
    else
      out << "+Inf";
    out << "\"} " << cumulative << "\n";
  }
  out << name << "_sum{" << labels << "} " << h.sum_ms / 1000 << "\n";
  out << name << "_count{" << labels << "} " << h.count << "\n";
}

} // namespace

void http_metrics::record(const std::string& model, const std::string& route, unsigned code,
                          double ms) {
  std::lock_guard<std::mutex> guard{mutex_};
  ++requests_[{model, route, code}];
  latency_[{model, route}].add(ms);
}

std::string http_metrics::render(const std::vector<model_status>& models) const {
  std::ostringstream out;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    out << "# HELP darcy_http_requests_total HTTP requests by model, route and status code.\n"
           "# TYPE darcy_http_requests_total counter\n";
    for (auto& [key, n] : requests_)
      out << "darcy_http_requests_total{model=\"" << escape(std::get<0>(key)) << "\",route=\""
          << std::get<1>(key) << "\",code=\"" << std::get<2>(key) << "\"} " << n << "\n";
    out << "# HELP darcy_http_request_duration_seconds Time from a parsed request to its answer.\n"
           "# TYPE darcy_http_request_duration_seconds histogram\n";
    for (auto& [key, h] : latency_)
      write_histogram(out, "darcy_http_request_duration_seconds",
                      "model=\"" + escape(key.first) + "\",route=\"" + key.second + "\"", h);
  }
  out << "# HELP darcy_model_available 1 while a version of the model answers requests.\n"
         "# TYPE darcy_model_available gauge\n";
  for (auto& m : models)
    out << "darcy_model_available{model=\"" << escape(m.model) << "\",version=\""
        << escape(m.version) << "\"} " << (m.state == model_state::available ? 1 : 0) << "\n";
  out << "# HELP darcy_shard_up 1 while the shard server runs.\n"
         "# TYPE darcy_shard_up gauge\n";
  for (auto& m : models)
    for (auto& s : m.shards)
      out << "darcy_shard_up{model=\"" << escape(m.model) << "\",shard=\"" << s.shard << "\"} "
          << (s.up ? 1 : 0) << "\n";
  out << "# HELP darcy_shard_restarts_total Restarts of the shard server by its supervisor.\n"
         "# TYPE darcy_shard_restarts_total counter\n";
  for (auto& m : models)
    for (auto& s : m.shards)
      out << "darcy_shard_restarts_total{model=\"" << escape(m.model) << "\",shard=\"" << s.shard
          << "\"} " << s.restarts << "\n";
  out << "# HELP darcy_shard_requests_total Shard requests of the root by result.\n"
         "# TYPE darcy_shard_requests_total counter\n";
  for (auto& m : models)
    for (auto& s : m.shards) {
      auto labels = "model=\"" + escape(m.model) + "\",shard=\"" + std::to_string(s.shard) + "\"";
      out << "darcy_shard_requests_total{" << labels << ",result=\"answered\"} " << s.answered
          << "\n"
          << "darcy_shard_requests_total{" << labels << ",result=\"failed\"} " << s.failed << "\n";
    }
  out << "# HELP darcy_shard_batches_total Batches of queries the root sent to the shard.\n"
         "# TYPE darcy_shard_batches_total counter\n";
  for (auto& m : models)
    for (auto& s : m.shards)
      out << "darcy_shard_batches_total{model=\"" << escape(m.model) << "\",shard=\"" << s.shard
          << "\"} " << s.batches << "\n";
  out << "# HELP darcy_shard_resent_total Shard batches sent again after an attempt without an "
         "answer.\n"
         "# TYPE darcy_shard_resent_total counter\n";
  for (auto& m : models)
    for (auto& s : m.shards)
      out << "darcy_shard_resent_total{model=\"" << escape(m.model) << "\",shard=\"" << s.shard
          << "\"} " << s.resent << "\n";
  out << "# HELP darcy_shard_duration_seconds Round trips from the root to the shard.\n"
         "# TYPE darcy_shard_duration_seconds histogram\n";
  for (auto& m : models)
    for (auto& s : m.shards)
      write_histogram(out, "darcy_shard_duration_seconds",
                      "model=\"" + escape(m.model) + "\",shard=\"" + std::to_string(s.shard) + "\"",
                      s.latency);
  out << "# HELP darcy_principal_requests_total Admitted requests by principal.\n"
         "# TYPE darcy_principal_requests_total counter\n";
  for (auto& m : models)
    for (auto& p : m.principals)
      out << "darcy_principal_requests_total{model=\"" << escape(m.model) << "\",principal=\""
          << escape(p.principal) << "\"} " << p.requests << "\n";
  out << "# HELP darcy_principal_rows_total Rows returned by principal.\n"
         "# TYPE darcy_principal_rows_total counter\n";
  for (auto& m : models)
    for (auto& p : m.principals)
      out << "darcy_principal_rows_total{model=\"" << escape(m.model) << "\",principal=\""
          << escape(p.principal) << "\"} " << p.rows << "\n";
  out << "# HELP darcy_principal_denied_total Denied requests by principal and cause.\n"
         "# TYPE darcy_principal_denied_total counter\n";
  for (auto& m : models)
    for (auto& p : m.principals) {
      auto labels = "model=\"" + escape(m.model) + "\",principal=\"" + escape(p.principal) + "\"";
      out << "darcy_principal_denied_total{" << labels << ",cause=\"access\"} " << p.denied_access
          << "\n"
          << "darcy_principal_denied_total{" << labels << ",cause=\"quota\"} " << p.denied_quota
          << "\n";
    }
  return out.str();
}

} // namespace darcy::serving
