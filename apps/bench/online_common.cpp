#include "apps/bench/online_common.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <thread>

#include "compute/estimator/metrics.hpp"
#include "compute/stats.hpp"
#include "messages/error.hpp"
#include "runtime/http/http_client.hpp"

namespace darcy::apps::online {

using namespace std::chrono_literals;

std::vector<std::string> logged(const std::string& log, const std::vector<std::string>& argv,
                                bool both) {
  std::vector<std::string> sh{"/bin/sh", "-c",
                              both ? "exec \"$@\" >>\"$0\" 2>&1" : "exec \"$@\" 2>>\"$0\"", log};
  sh.insert(sh.end(), argv.begin(), argv.end());
  return sh;
}

std::string tail_of(const std::string& path) {
  std::ifstream in{path};
  std::string text{std::istreambuf_iterator<char>(in), {}};
  return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
}

double percentile(const std::vector<double>& v, double q) {
  return v.empty() ? std::nan("") : compute::percentile(v, q);
}

double auc_of(const std::vector<double>& p, const std::vector<double>& y) {
  auto auc = *compute::estimator::streaming_metric::make(compute::estimator::metric_kind::auc_roc);
  if (p.empty() || auc.update({p, y}))
    return std::nan("");
  return auc.value();
}

nlohmann::json number(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json{};
}

sync_latency split_by_syncs(
  const std::vector<answer_record>& answers,
  const std::vector<std::pair<steady::time_point, steady::time_point>>& pushes) {
  sync_latency out;
  auto overlaps = [](const answer_record& a, const auto& push) {
    return a.sent < push.second && push.first < a.answered;
  };
  for (auto& a : answers) {
    out.failed += a.ok ? 0 : 1;
    auto ms = std::chrono::duration<double, std::milli>(a.answered - a.sent).count();
    if (!pushes.empty() && overlaps(a, pushes.front())) {
      ++out.during_restore;
      continue;
    }
    bool syncing =
      std::any_of(pushes.begin(), pushes.end(), [&](auto& push) { return overlaps(a, push); });
    (syncing ? out.during_ms : out.without_ms).push_back(ms);
  }
  return out;
}

caf::error wait_served(const runtime::host_port& at, const std::string& model,
                       runtime::child_process& serve, const std::string& log,
                       const std::string& token) {
  auto line = serve.wait_for_line("darcy serve listening on", 120s);
  if (!line)
    return make_error(errc::io_error, "online bench: darcy serve did not start:\n" + tail_of(log));
  auto deadline = steady::now() + 120s;
  while (steady::now() < deadline) {
    auto raw =
      runtime::http_exchange(at, runtime::http_request_text("GET", "/v1/models/" + model, token));
    auto j = nlohmann::json::parse(runtime::http_body(raw), nullptr, false);
    if (runtime::http_status(raw) == 200 && j.is_object() && j.value("embeddings", "") == "shards")
      return {};
    std::this_thread::sleep_for(100ms);
  }
  return make_error(errc::timeout, "online bench: the model was not served:\n" + tail_of(log));
}

} // namespace darcy::apps::online
