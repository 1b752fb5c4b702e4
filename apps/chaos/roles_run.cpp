#include "apps/chaos/roles_run.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <signal.h>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"

namespace darcy::apps {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr auto chief_patience = 120s;

/// The last `n` characters of `text`.
std::string last(const std::string& text, size_t n) {
  return text.substr(text.size() > n ? text.size() - n : 0);
}

} // namespace

roles_run::roles_run(roles_options o, std::string binary, std::string dir)
  : o_(std::move(o)), binary_(std::move(binary)), dir_(std::move(dir)) {
}

caf::error roles_run::start() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::ofstream{dir_ + "/node.toml"}
    << "[node]\nchaos = true\n\n[cluster]\n"
       "heartbeat_interval_ms = 200\nheartbeat_timeout_ms = 2000\n";
  chief_address_.clear();
  if (chief_)
    chief_earlier_ =
      last(chief_earlier_ + chief_->read_stderr() + "[soak: the chief ended]\n", 100000);
  auto chief = runtime::child_process::start(argv("chief", 0));
  if (!chief)
    return std::move(chief.error());
  chief_.emplace(std::move(*chief));
  auto line = chief_->wait_for_line("listening on", chief_patience);
  if (!line)
    return make_error(errc::io_error, "soak: the chief did not start: " + chief_->read_stderr());
  chief_address_ = line->substr(line->rfind(' ') + 1);
  if (killable_.empty()) {
    for (size_t i = 0; i < o_.workers; ++i)
      killable_.push_back({"worker", i, {}, {}});
    for (size_t i = 0; i < o_.parameter_servers; ++i)
      killable_.push_back({"ps", i, {}, {}});
  }
  for (auto& t : killable_)
    if (auto err = start(t.name()))
      return err;
  if (o_.evaluator) {
    auto evaluator = runtime::child_process::start(argv("evaluator", 0));
    if (!evaluator)
      return std::move(evaluator.error());
    evaluator_.emplace(std::move(*evaluator));
  }
  return {};
}

caf::error roles_run::start(const std::string& name) {
  auto& t = find(name);
  auto p = runtime::child_process::start(argv(t.type, t.index));
  if (!p)
    return std::move(p.error());
  bury(t);
  t.process.emplace(std::move(*p));
  return {};
}

void roles_run::kill(const std::string& name) {
  auto& t = find(name);
  t.process->signal(SIGKILL);
  (void)t.process->wait(10s);
  bury(t);
}

std::vector<std::string> roles_run::kill_job(std::chrono::milliseconds patience) {
  chief_->signal(SIGKILL);
  (void)chief_->wait(10s);
  std::vector<std::string> killed;
  auto until = std::chrono::steady_clock::now() + patience;
  for (auto& t : killable_) {
    if (!t.process)
      continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      until - std::chrono::steady_clock::now());
    if (!t.process->wait(std::max(left, std::chrono::milliseconds{0}))) {
      t.process->signal(SIGKILL);
      (void)t.process->wait(10s);
      killed.push_back(t.name());
    }
    bury(t);
  }
  return killed;
}

std::vector<std::string> roles_run::running() const {
  std::vector<std::string> names;
  for (auto& t : killable_)
    if (t.process)
      names.push_back(t.name());
  return names;
}

void roles_run::drain() {
  for (auto* p : {&chief_, &evaluator_})
    if (*p)
      (void)(*p)->read_stderr();
  for (auto& t : killable_)
    if (t.process)
      (void)t.process->read_stderr();
}

std::string roles_run::messages(size_t n) {
  auto share = n / (killable_.size() + 2);
  std::string out;
  if (chief_)
    out += "--- chief ---\n" + last(chief_earlier_ + chief_->read_stderr(), share);
  if (evaluator_)
    out += "--- evaluator ---\n" + last(evaluator_->read_stderr(), share);
  for (auto& t : killable_)
    out += "--- " + t.name() + " ---\n" +
           last(t.earlier + (t.process ? t.process->read_stderr() : std::string{}), share);
  return out;
}

std::vector<std::string> roles_run::argv(const std::string& type, size_t index) const {
  auto any = "127.0.0.1:0";
  nlohmann::json spec{{"chief", {chief_address_.empty() ? any : chief_address_}},
                      {"ps", std::vector<std::string>(o_.parameter_servers, any)},
                      {"worker", std::vector<std::string>(o_.workers, any)}};
  if (o_.evaluator)
    spec["evaluator"] = {any};
  std::vector<std::string> out{binary_, "estimator"};
  out.insert(out.end(), o_.app.begin(), o_.app.end());
  out.insert(out.end(),
             {"--threads", "1", "--task-type", type, "--task-index", std::to_string(index),
              "--cluster-spec", spec.dump(), "--max-steps", std::to_string(o_.max_steps),
              "--save-checkpoints-steps", std::to_string(o_.checkpoint_steps), "--model-dir",
              dir_ + "/model", "--node-config", dir_ + "/node.toml", "--quiet"});
  out.insert(out.end(), o_.flags.begin(), o_.flags.end());
  return out;
}

roles_run::task& roles_run::find(const std::string& name) {
  return *std::find_if(killable_.begin(), killable_.end(),
                       [&](const task& t) { return t.name() == name; });
}

void roles_run::bury(task& t) {
  if (!t.process)
    return;
  t.earlier = last(t.earlier + t.process->read_stderr() + "[soak: the process ended]\n", 100000);
  t.process.reset();
}

} // namespace darcy::apps
