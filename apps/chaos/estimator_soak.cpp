#include "apps/chaos/estimator_soak.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include <signal.h>

#include "apps/chaos/roles_run.hpp"
#include "compute/stats.hpp"
#include "messages/error.hpp"
#include "ops/ctr/ctr_data.hpp"
#include "ops/session.hpp"
#include "ops/testing/local_cluster.hpp"
#include "runtime/cluster/chaos.hpp"
#include "runtime/process/process.hpp"

namespace darcy::apps {

namespace {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// The quality is the mean of the job's metric over the checkpoints of the last
/// `averaged_steps` global steps (5 of them): a single checkpoint's accuracy moves by ±0.4%
/// between clean runs, with the order in which asynchronous pushes land.
constexpr uint64_t averaged_steps = 500;

/// The app of a soaked job, the metric its evaluator reports, and its length.
struct roles_job {
  std::vector<std::string> app;
  std::string metric;
  uint64_t max_steps = 0;
};

/// "estimator": 4,000 global steps (17 epochs) of a 784-64-10 DNN over the 60,000 training
/// images in batches of 256, Adam at 3e-4, evaluated on the 10,000 test images. "ctr": 3,000
/// global steps of a small DLRM (dim 8) over 200,000 generated rows of at most 1,000 ids a
/// field, evaluated by AUC on 20,000 later rows; its 26 tables live on the ps node's shards.
caf::expected<roles_job> roles_job_of(const soak_options& o) {
  if (o.job == "ctr") {
    auto dir = o.dir + "/data";
    std::error_code ec;
    fs::create_directories(dir, ec);
    for (auto [name, first, rows] : {std::tuple{"train.tsv", uint64_t{0}, uint64_t{200000}},
                                     std::tuple{"test.tsv", uint64_t{200000}, uint64_t{20000}}}) {
      ops::ctr::ctr_data_options d{.generator = {.seed = o.seed, .max_ids = 1000}};
      d.first_row = first;
      d.rows = rows;
      d.out = dir + "/" + name;
      if (auto written = ops::ctr::write_ctr_data(d); !written)
        return std::move(written.error());
    }
    return roles_job{
      {"ctr", "--train", dir + "/train.tsv", "--eval", dir + "/test.tsv", "--embedding-dim", "8",
       "--bottom", "32,8", "--top", "32", "--batch", "128", "--seed", std::to_string(o.seed)},
      "auc_roc",
      3000};
  }
  if (!fs::exists(fs::path{soak_fashion_mnist_dir} / "train-images-idx3-ubyte.gz"))
    return make_error(errc::invalid_config,
                      "soak: the estimator job trains on Fashion-MNIST, which is not in " +
                        std::string{soak_fashion_mnist_dir} +
                        ": apt-get install dataset-fashion-mnist (make deps)");
  return roles_job{{"fashion-mnist", "--data", soak_fashion_mnist_dir, "--hidden", "64", "--seed",
                    std::to_string(o.seed), "--train-examples", "0", "--eval-examples", "0",
                    "--learning-rate", "0.0003", "--batch", "256"},
                   "accuracy",
                   4000};
}
constexpr auto patience = 120s;

/// A kill whose recovery is still awaited: the victim's services as the registry listed them.
struct pending_kill {
  clock::time_point at;
  /// The victim's task name: "worker-I" or "ps-0".
  std::string victim;
  std::vector<service_info> services;
  /// The chief has seen the victim down, and its replacement has been started.
  bool replaced = false;
};

/// Recovered: the replacement is up, and each of the victim's services runs again as another
/// actor on a member that is up.
bool recovered(const cluster_status& st, const pending_kill& p) {
  if (testing::state_of(st, p.victim) != member_state::up)
    return false;
  for (auto& old : p.services) {
    bool back = false;
    for (auto& s : st.services)
      back = back || (s.name == old.name && s.actor != old.actor &&
                      testing::state_of(st, s.node) == member_state::up);
    if (!back)
      return false;
  }
  return true;
}

/// The victims worth a kill: the ps, and each worker whose node hosts a service (a worker
/// killed before the chief has placed the workers' actors costs the job nothing to recover).
/// Empty until every one of the `workers` worker services runs, so that a kill always lands
/// on a running job, however slowly the processes started.
std::vector<std::string> victims(const cluster_status& st, const std::vector<std::string>& running,
                                 size_t workers) {
  size_t placed = 0;
  for (auto& s : st.services)
    placed += s.name.rfind("estimator.worker.", 0) == 0 &&
              testing::state_of(st, s.node) == member_state::up;
  std::vector<std::string> found;
  if (placed < workers)
    return found;
  for (auto& name : running) {
    bool hosts = name.rfind("ps-", 0) == 0;
    for (auto& s : st.services)
      hosts = hosts || s.node == name;
    if (hosts)
      found.push_back(name);
  }
  return found;
}

/// The JSON lines of `out` whose "role" is `role`, in order.
std::vector<nlohmann::json> lines_of(const std::string& out, const std::string& role) {
  std::vector<nlohmann::json> found;
  std::istringstream lines{out};
  for (std::string l; std::getline(lines, l);) {
    auto j = nlohmann::json::parse(l, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.value("role", "") == role)
      found.push_back(std::move(j));
  }
  return found;
}

/// The mean of the job's metric over the evaluations at global steps past max_steps -
/// averaged_steps; -1 when there is none.
double final_quality(const std::vector<nlohmann::json>& evaluations, const roles_job& job) {
  double sum = 0;
  size_t count = 0;
  for (auto& e : evaluations)
    if (e.value("global_step", uint64_t{0}) > job.max_steps - averaged_steps &&
        e.contains(job.metric) && e[job.metric].is_number()) {
      sum += e[job.metric].get<double>();
      ++count;
    }
  return count == 0 ? -1 : sum / double(count);
}

/// What one run of the job gave.
struct run_outcome {
  bool completed = false;
  std::string failure;
  double seconds = 0;
  double quality = -1;
  uint32_t worker_restarts = 0;
  uint32_t ps_recoveries = 0;
  uint64_t replayed_steps = 0;
};

/// The run's results after its chief exited with `code`: the chief's and the evaluator's.
run_outcome finish(roles_run& run, const roles_job& job, int code) {
  run_outcome r;
  run.chief().wait_for_line("\x01", patience); // reads stdout to its end
  auto chief_lines = lines_of(run.chief().stdout_seen(), "chief");
  if (code != 0 || chief_lines.empty()) {
    r.failure = "the chief exited " + std::to_string(code) + ": " + run.chief().read_stderr();
    return r;
  }
  r.worker_restarts = chief_lines.back().value("worker_restarts", 0u);
  r.ps_recoveries = chief_lines.back().value("ps_recoveries", 0u);
  r.replayed_steps = chief_lines.back().value("replayed_steps", uint64_t{0});
  // The evaluator ends once it has evaluated the checkpoint at max_steps.
  auto& evaluator = *run.evaluator();
  evaluator.wait_for_line("\x01", patience);
  r.quality = final_quality(lines_of(evaluator.stdout_seen(), "evaluator"), job);
  if (r.quality < 0) {
    r.failure = "the evaluator reported no " + job.metric + ": " + evaluator.read_stderr();
    return r;
  }
  r.completed = true;
  return r;
}

/// The job's processes: the chief, one ps, o.nodes - 2 workers (at least 2) and the evaluator.
roles_run make_roles_run(const soak_options& o, const roles_job& job, const std::string& binary,
                         const std::string& dir) {
  return roles_run{
    {.app = job.app, .max_steps = job.max_steps, .workers = std::max<size_t>(2, o.nodes - 2)},
    binary,
    dir};
}

/// Waits for the chief of `run` to exit, at most `deadline`; calls `tick` every 20 ms.
template <class Tick>
run_outcome await_chief(roles_run& run, const roles_job& job,
                        std::chrono::duration<double> deadline, Tick tick) {
  auto start = clock::now();
  for (;;) {
    if (auto code = run.chief().wait(20ms)) {
      auto r = finish(run, job, *code);
      r.seconds = compute::seconds_since(start);
      return r;
    }
    if (clock::now() - start > deadline) {
      run_outcome r;
      auto err = run.chief().read_stderr();
      r.failure =
        "the job did not finish within " + std::to_string(int(deadline.count())) +
        " s; the chief's last messages: " + err.substr(err.size() > 1500 ? err.size() - 1500 : 0);
      run.chief().signal(SIGKILL);
      return r;
    }
    run.drain();
    tick();
  }
}

} // namespace

caf::expected<soak_result> run_estimator_soak(const soak_options& o, const std::string& binary) {
  if (o.nodes < 4)
    return make_error(errc::invalid_config,
                      "soak: the estimator job needs at least 4 "
                      "nodes: a chief, a ps and 2 workers");
  auto job = roles_job_of(o);
  if (!job)
    return std::move(job.error());
  soak_result result;

  // The clean run: the same job and seed, left alone.
  soak_log(o, "clean run of " + o.job + " on " + std::to_string(o.nodes) + " processes");
  {
    auto clean = make_roles_run(o, *job, binary, o.dir + "/clean");
    if (auto err = clean.start())
      return err;
    auto r = await_chief(clean, *job, std::chrono::duration<double>(1800), [] {});
    if (!r.completed)
      return make_error(errc::io_error, "soak: the clean run failed: " + r.failure);
    result.clean_seconds = r.seconds;
    result.clean_quality = r.quality;
  }

  // The soak.
  auto run = make_roles_run(o, *job, binary, o.dir + "/soaked");
  if (auto err = run.start())
    return err;
  auto seed = runtime::parse_host_port(run.chief_address());
  if (!seed)
    return std::move(seed.error());
  auto client =
    ops::session::open({.seed = *seed, .name = "soak-client", .timeout = 2000ms, .threads = 1});
  if (!client)
    return std::move(client.error());
  disruption plan{o.drop, o.delay, o.delay_ms, o.seed};
  std::mt19937_64 rng{o.seed};
  auto kill_at = kill_times(o, result.clean_seconds, rng);
  soak_log(o, "soaked run: " + std::to_string(o.kills) + " kills, " + std::to_string(o.drop) +
                " dropped, " + std::to_string(o.delay) + " delayed, seed " +
                std::to_string(o.seed));
  std::map<std::string, chaos_stats> node_counts;
  std::set<std::string> disrupted;
  std::vector<pending_kill> pending;
  std::vector<double> recover_s;
  auto start = clock::now();
  auto next_poll = clock::now();
  auto kill_due = [&] {
    return result.kills < kill_at.size() && compute::seconds_since(start) >= kill_at[result.kills];
  };
  auto tick = [&] {
    if (clock::now() < next_poll && !kill_due())
      return;
    next_poll = clock::now() + 250ms;
    auto st = (*client)->status();
    if (!st)
      return;
    // Every member is disrupted as it comes up (replacements included); its counts are read
    // while it lives.
    disrupt_members(**client, *st, plan, disrupted, node_counts);
    for (auto it = pending.begin(); it != pending.end();) {
      if (!it->replaced) {
        // A live name cannot join twice: the replacement starts once the victim is down.
        if (testing::state_of(*st, it->victim) != member_state::up && !run.start(it->victim)) {
          it->replaced = true;
          disrupted.erase(it->victim);
        }
        ++it;
      } else if (recovered(*st, *it)) {
        recover_s.push_back(compute::seconds_since(it->at));
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
    if (!kill_due())
      return;
    // The victim: the ps or a worker hosting its service, among those running; the kill
    // waits while there is none.
    auto alive = victims(*st, run.running(), run.workers());
    if (alive.empty())
      return;
    pending_kill p{clock::now(), alive[rng() % alive.size()], {}, false};
    for (auto& s : st->services)
      if (s.node == p.victim)
        p.services.push_back(s);
    run.kill(p.victim);
    ++result.kills;
    soak_log(o, "killed " + p.victim + " at " + std::to_string(compute::seconds_since(start)) +
                  " s (" + std::to_string(p.services.size()) + " services)");
    pending.push_back(std::move(p));
  };
  auto deadline = std::chrono::duration<double>(soak_deadline_s(o, result.clean_seconds));
  auto r = await_chief(run, *job, deadline, tick);
  result.seconds = r.seconds;
  for (auto& p : pending) // not recovered before the job ended: counted up to its end
    recover_s.push_back(compute::seconds_since(p.at));
  summarize(result, std::move(recover_s), node_counts);
  result.completed = r.completed;
  result.failure = r.failure;
  result.restarts = r.worker_restarts + r.ps_recoveries;
  // A killed worker loses at most the step it was computing; a killed ps, the global steps
  // since the last checkpoint, which the chief loads into the servers again.
  result.lost_work = r.worker_restarts + r.replayed_steps;
  if (r.completed) {
    result.quality = r.quality;
    result.quality_delta = (r.quality - result.clean_quality) / result.clean_quality;
  }
  return result;
}

} // namespace darcy::apps
