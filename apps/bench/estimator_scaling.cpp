#include "apps/bench/estimator_scaling.hpp"

#include <unistd.h>
#include <csignal>
#include <filesystem>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "runtime/process/process.hpp"

namespace darcy::apps {

namespace {

constexpr auto patience = std::chrono::seconds(600);

std::vector<std::string> role_argv(const scaling_options& o, const std::string& dir,
                                   const std::string& cluster, const std::string& type,
                                   size_t index) {
  return {runtime::sibling_executable("darcy"),
          "estimator",
          "brown-genre",
          "--quiet",
          "--corpus",
          o.corpus,
          "--threads",
          std::to_string(o.threads),
          "--task-type",
          type,
          "--task-index",
          std::to_string(index),
          "--cluster-spec",
          cluster,
          "--max-steps",
          std::to_string(o.steps),
          "--save-checkpoints-steps",
          std::to_string(o.steps),
          "--model-dir",
          dir + "/model"};
}

std::string cluster_spec(const std::string& chief, size_t ps, size_t workers) {
  nlohmann::json spec{{"chief", {chief}},
                      {"ps", std::vector<std::string>(ps, "127.0.0.1:0")},
                      {"worker", std::vector<std::string>(workers, "127.0.0.1:0")}};
  return spec.dump();
}

} // namespace

caf::expected<scaling_run> distributed_run(const scaling_options& o, size_t workers) {
  namespace fs = std::filesystem;
  auto dir = (fs::temp_directory_path() /
              ("darcy-bench-scaling-" + std::to_string(::getpid()) + "-" + std::to_string(workers)))
               .string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto chief = runtime::child_process::start(
    role_argv(o, dir, cluster_spec("127.0.0.1:0", o.ps, workers), "chief", 0));
  if (!chief)
    return std::move(chief.error());
  auto line = chief->wait_for_line("listening on", patience);
  if (!line)
    return make_error(errc::io_error, "the chief did not start: " + chief->read_stderr());
  auto cluster = cluster_spec(line->substr(line->rfind(' ') + 1), o.ps, workers);
  std::vector<runtime::child_process> hosts;
  // hosts: the ps tasks, then the workers.
  for (auto [type, count] : {std::pair{"ps", o.ps}, std::pair{"worker", workers}})
    for (size_t i = 0; i < count; ++i) {
      auto p = runtime::child_process::start(role_argv(o, dir, cluster, type, i));
      if (!p)
        return std::move(p.error());
      hosts.push_back(std::move(*p));
    }
  auto result = chief->wait_for_line("\"role\":\"chief\"", patience);
  auto stderr_text = chief->read_stderr();
  // A worker prints its step's phases when its training ends, before the chief's last line.
  scaling_run run;
  size_t reports = 0;
  for (size_t i = o.ps; result && i < hosts.size(); ++i) {
    auto line = hosts[i].wait_for_line("\"role\":\"worker\"", std::chrono::seconds(10));
    auto report = line ? nlohmann::json::parse(*line, nullptr, false) : nlohmann::json{};
    if (!report.is_object() || !report.contains("step_ms") || !report["step_ms"].is_object())
      continue;
    ++reports;
    for (auto& [phase, ms] : report["step_ms"].items())
      if (ms.is_number())
        run.worker_step_ms[phase] += ms.get<double>();
  }
  for (auto& [phase, ms] : run.worker_step_ms)
    ms /= double(reports);
  // The others leave once the chief is gone; after a failed chief they would wait for it to
  // come back, so they go at once. The destructor kills stragglers.
  for (auto& h : hosts)
    if (!result)
      h.signal(SIGKILL);
  for (auto& h : hosts)
    h.wait(std::chrono::seconds(30));
  fs::remove_all(dir);
  if (!result) {
    bool exited = static_cast<bool>(chief->wait(std::chrono::seconds(5)));
    return make_error(exited ? errc::io_error : errc::timeout,
                      "the chief with " + std::to_string(workers) + " workers " +
                        (exited ? "failed: " : "did not finish: ") + stderr_text);
  }
  auto json = nlohmann::json::parse(*result, nullptr, false);
  if (json.is_discarded() || !json.contains("steps_per_second"))
    return make_error(errc::io_error, "the chief printed " + *result);
  run.steps_per_second = json["steps_per_second"].get<double>();
  return run;
}

} // namespace darcy::apps
