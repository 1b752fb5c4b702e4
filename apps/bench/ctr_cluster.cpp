#include "apps/bench/ctr_cluster.hpp"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "runtime/process/process.hpp"

namespace darcy::apps {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string units_arg(const std::vector<uint32_t>& units) {
  std::string out;
  for (auto u : units)
    out += (out.empty() ? "" : ",") + std::to_string(u);
  return out;
}

/// A role's process, with what it wrote to stderr (kept to its last 64 KiB).
struct role {
  std::string name;
  runtime::child_process process;
  std::string err;

  void drain() {
    err += process.read_stderr();
    if (err.size() > 65536)
      err.erase(0, err.size() - 65536);
  }
};

} // namespace

caf::expected<ctr_cluster_result> run_ctr_cluster(const ctr_cluster_options& o) {
  std::error_code ec;
  fs::remove_all(o.dir, ec);
  fs::create_directories(o.dir, ec);
  auto spec = [&](const std::string& chief) {
    nlohmann::json cluster{{"chief", {chief}}, {"evaluator", {"127.0.0.1:0"}}};
    cluster["ps"] = std::vector<std::string>(o.ps, "127.0.0.1:0");
    cluster["worker"] = std::vector<std::string>(o.workers, "127.0.0.1:0");
    return cluster;
  };
  auto argv = [&](const nlohmann::json& cluster, const std::string& type, size_t index) {
    nlohmann::json config{{"cluster", cluster}, {"task", {{"type", type}, {"index", index}}}};
    return std::vector<std::string>{"/usr/bin/env",
                                    "DARCY_CONFIG=" + config.dump(),
                                    runtime::sibling_executable("darcy"),
                                    "estimator",
                                    "ctr",
                                    "--train",
                                    o.train,
                                    "--eval",
                                    o.test,
                                    "--batch",
                                    std::to_string(o.batch),
                                    "--embedding-dim",
                                    std::to_string(o.embedding_dim),
                                    "--bottom",
                                    units_arg(o.bottom_units),
                                    "--top",
                                    units_arg(o.top_units),
                                    "--seed",
                                    std::to_string(o.seed),
                                    "--threads",
                                    "1",
                                    "--quiet",
                                    "--max-steps",
                                    std::to_string(o.steps),
                                    "--save-checkpoints-steps",
                                    std::to_string(std::max<uint64_t>(1, o.steps / 4)),
                                    "--eval-examples",
                                    std::to_string(o.eval_examples),
                                    "--model-dir",
                                    o.dir + "/model"};
  };
  std::vector<role> roles;
  auto launch = [&](const std::string& name, const std::vector<std::string>& args) -> caf::error {
    auto p = runtime::child_process::start(args);
    if (!p)
      return std::move(p.error());
    roles.push_back({name, std::move(*p), {}});
    return {};
  };
  auto failed = [&](const std::string& what) {
    std::string out = "the distributed ctr job " + what;
    for (auto& r : roles) {
      r.drain();
      r.process.signal(SIGKILL);
      if (!r.err.empty())
        out += "\n--- " + r.name + " ---\n" + r.err;
    }
    return make_error(errc::io_error, out);
  };
  if (auto err = launch("chief", argv(spec("127.0.0.1:0"), "chief", 0)))
    return err;
  auto listening = roles.front().process.wait_for_line("listening on", 60s);
  if (!listening)
    return failed("did not start: its chief never listened");
  auto cluster = spec(listening->substr(listening->rfind(' ') + 1));
  for (size_t i = 0; i < o.ps; ++i)
    if (auto err = launch("ps " + std::to_string(i), argv(cluster, "ps", i)))
      return failed("could not start a ps: " + to_string(err));
  for (size_t i = 0; i < o.workers; ++i)
    if (auto err = launch("worker " + std::to_string(i), argv(cluster, "worker", i)))
      return failed("could not start a worker: " + to_string(err));
  if (auto err = launch("evaluator", argv(cluster, "evaluator", 0)))
    return failed("could not start the evaluator: " + to_string(err));
  // Every role's stderr is drained while the chief works, so that no pipe fills.
  std::optional<std::string> result;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::hours(2);
  while (!result) {
    auto line = roles.front().process.wait_for_line("\"role\":\"chief\"", 1s);
    for (auto& r : roles)
      r.drain();
    if (line)
      result = *line;
    else if (!is(line.error(), errc::timeout))
      return failed("failed: its chief stopped before its end");
    else if (std::chrono::steady_clock::now() > deadline)
      return failed("did not end within 2 hours");
  }
  ctr_cluster_result out;
  auto chief_line = nlohmann::json::parse(*result, nullptr, false);
  if (!chief_line.is_object())
    return failed("printed a bad chief line: " + *result);
  out.global_step = chief_line.value("global_step", uint64_t{0});
  out.examples_per_s = chief_line.value("steps_per_second", 0.0) * double(o.batch);
  // The evaluator follows the checkpoints to the last one, then ends by itself: its stdout is
  // read to its end while every stderr is drained, so that no pipe fills meanwhile.
  auto& evaluator = roles.back();
  for (auto until = std::chrono::steady_clock::now() + 10min;;) {
    auto line = evaluator.process.wait_for_line("\x01", 1s);
    for (auto& r : roles)
      r.drain();
    if (!line && !is(line.error(), errc::timeout))
      break;
    if (std::chrono::steady_clock::now() > until)
      return failed("did not end: its evaluator still ran 10 minutes after the chief");
  }
  if (auto code = evaluator.process.wait(60s); !code || *code != 0)
    return failed("failed: its evaluator did not exit cleanly");
  std::istringstream lines{evaluator.process.stdout_seen()};
  bool evaluated = false;
  for (std::string l; std::getline(lines, l);) {
    auto j = nlohmann::json::parse(l, nullptr, false);
    if (j.is_object() && j.value("role", "") == "evaluator" && j.contains("auc_roc")) {
      out.auc = j["auc_roc"].get<double>();
      evaluated = true;
    }
  }
  if (!evaluated)
    return failed("ended without an evaluation");
  for (auto& r : roles)
    if (auto code = r.process.wait(60s); !code)
      r.process.signal(SIGKILL);
  fs::remove_all(o.dir, ec);
  return out;
}

} // namespace darcy::apps
