#include "apps/chaos/online_cluster_soak.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string_view>
#include <thread>

#include "apps/chaos/online_watch.hpp"
#include "apps/chaos/roles_run.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"
#include "ops/testing/local_cluster.hpp"
#include "runtime/cluster/chaos.hpp"

namespace darcy::apps {

namespace {

using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr uint64_t batch = 256;
constexpr size_t workers = 2;
/// The ps's tables: rows in its memory tier, the rest in LevelDB.
constexpr const char* memory_budget = "1MiB";
/// How long the chief may take to write its export, and its ps and workers to end after it.
constexpr auto export_patience = 300s;
constexpr auto orphans_patience = 30s;
constexpr auto disruption_poll = 250ms;
/// What the chief says when it goes on from the state the job kept, after its ps or itself was
/// killed: the last sync, or a checkpoint (of the state resumed from a sync, after a ps).
constexpr std::string_view resumed[] = {"chief: resumed from the sync at global step ",
                                        " embedding rows from the checkpoint at global step "};

/// The victims of training's kills, in order: a seeded order of the chief, the ps and a worker,
/// repeated.
std::vector<std::string> victims_of(uint64_t seed, size_t kills) {
  std::mt19937_64 rng{seed * 104729 + 3};
  std::vector<std::string> kinds{"chief", "ps-0", "worker-" + std::to_string(rng() % workers)};
  std::shuffle(kinds.begin(), kinds.end(), rng);
  std::vector<std::string> out;
  for (size_t k = 0; k < kills; ++k)
    out.push_back(kinds[k % kinds.size()]);
  return out;
}

/// The distributed job of one run, and the session through which the soak disrupts its
/// members and sees them down.
class cluster_job {
public:
  cluster_job(const soak_options& o, const std::string& binary, const std::string& dir,
              uint16_t port, std::vector<double> kills_s)
    : o_(o),
      sync_dir_(dir + "/sync"),
      kills_s_(std::move(kills_s)),
      victims_(victims_of(o.seed, kills_s_.size())),
      plan_{o.drop, o.delay, o.delay_ms, o.seed},
      roles_({.app = app(o, dir, port),
              .max_steps = o.stream_rows / batch,
              .checkpoint_steps = 1'000'000'000,
              .workers = workers,
              .parameter_servers = 1,
              .evaluator = false},
             binary, dir) {}

  const std::string& sync_dir() const { return sync_dir_; }

  caf::error start(online_run&) {
    if (auto err = roles_.start())
      return err;
    started_ = true;
    // Serving starts from the export the chief writes before its first sync.
    auto line = roles_.chief().wait_for_line("\"exported\"", export_patience);
    if (!line)
      return make_error(errc::io_error,
                        "soak: the chief wrote no export: " + last_chars(roles_.messages(), 3000));
    return {};
  }

  void drive(online_run& run) {
    size_t next_kill = 0;
    auto next_poll = steady::now();
    while (!run.stop) {
      record_sync(sync_dir_, run);
      (void)roles_.chief().wait_for_line("\x01", 1ms); // its sync lines
      if (auto code = roles_.chief().wait(0ms)) {
        keep_log(run);
        if (*code != 0)
          return run.fail("the chief exited " + std::to_string(*code) + ":\n" +
                          last_chars(run.training_log, 4000));
        count_resumes();
        if (resumes_ < resumes_due_)
          return run.fail("the job went on from a sync or checkpoint " + std::to_string(resumes_) +
                          " times after " + std::to_string(resumes_due_) +
                          " kills of its chief or ps:\n" + last_chars(run.training_log, 4000));
        run.training_ended = steady::now();
        return;
      }
      if (next_kill < kills_s_.size() &&
          std::chrono::duration<double>(steady::now() - run.serving_began).count() >=
            kills_s_[next_kill]) {
        if (auto err = kill(victims_[next_kill++], run))
          return run.fail(to_string(err) + "\n" + last_chars(run.training_log, 4000));
        continue;
      }
      if (steady::now() >= next_poll) {
        next_poll = steady::now() + disruption_poll;
        keep_log(run);
        count_resumes();
        disrupt_and_restart();
      }
      std::this_thread::sleep_for(online_poll);
    }
  }

  void stop() {
    if (started_)
      (void)roles_.kill_job(0ms);
    started_ = false;
    client_.reset();
  }

  void report(soak_result& r) const {
    r.restarts += restarts_;
    for (auto& [name, c] : counts_) {
      r.dropped += c.dropped;
      r.delayed += c.delayed;
    }
  }

private:
  static std::vector<std::string> app(const soak_options& o, const std::string& dir,
                                      uint16_t port) {
    std::vector<std::string> argv{"ctr",
                                  "--stream",
                                  "generate",
                                  "--max-ids",
                                  std::to_string(online_max_ids),
                                  "--seed",
                                  std::to_string(o.seed),
                                  "--batch",
                                  std::to_string(batch),
                                  "--leveldb",
                                  dir + "/tables",
                                  "--memory-budget",
                                  memory_budget};
    for (auto& flag : online_sync_flags(dir, port))
      argv.push_back(flag);
    return argv;
  }

  /// Counts the resumes the running chief reported, into resumes_, and logs each new one.
  void count_resumes() {
    auto said = roles_.chief_messages();
    size_t seen = 0;
    for (auto needle : resumed)
      for (auto at = said.find(needle); at != std::string::npos; at = said.find(needle, at + 1))
        if (++seen > chief_resumes_)
          soak_log(o_, line_at(said, at));
    if (seen > chief_resumes_) {
      resumes_ += seen - chief_resumes_;
      chief_resumes_ = seen;
      awaiting_resume_ = false;
    }
  }

  void keep_log(online_run& run) {
    auto log = roles_.messages();
    std::lock_guard<std::mutex> guard{run.mutex};
    run.training_log = std::move(log);
  }

  /// SIGKILLs `victim`: a ps or worker starts again once the chief lists it down; the chief
  /// takes its job with it, which starts again at once.
  caf::error kill(const std::string& victim, online_run& run) {
    soak_log(o_,
             "killed " + victim + " of the training job at " +
               std::to_string(std::chrono::duration<double>(steady::now() - run.begun).count()) +
               " s");
    count_resumes();
    // A ps killed, then the chief before it resumed: one resume is due for both.
    if ((victim == "chief" || victim.rfind("ps-", 0) == 0) && !awaiting_resume_) {
      ++resumes_due_;
      awaiting_resume_ = true;
    }
    if (victim != "chief") {
      roles_.kill(victim);
      restart_.push_back(victim);
      std::lock_guard<std::mutex> guard{run.mutex};
      run.training_kills.push_back(steady::now());
      return {};
    }
    auto orphans = roles_.kill_job(orphans_patience);
    chief_resumes_ = 0;
    {
      std::lock_guard<std::mutex> guard{run.mutex};
      run.training_kills.push_back(steady::now());
    }
    if (!orphans.empty())
      return make_error(errc::io_error, "soak: tasks outlived their chief by " +
                                          std::to_string(orphans_patience.count()) +
                                          " s: " + orphans.front());
    client_.reset();
    disrupted_.clear();
    restart_.clear();
    restarts_ += 2 + workers; // the chief, the ps and the workers
    return roles_.start();
  }

  /// Disrupts every member of the job that is up and not yet disrupted (restarted ones
  /// included), reads the counts of the others, and starts again the tasks killed once the
  /// chief lists them down (a live name cannot join twice).
  void disrupt_and_restart() {
    if (!client_) {
      auto seed = runtime::parse_host_port(roles_.chief_address());
      if (!seed)
        return;
      auto c = ops::session::open(
        {.seed = *seed, .name = "soak-training-client", .timeout = 2000ms, .threads = 1});
      if (!c)
        return;
      client_ = std::move(*c);
    }
    auto st = client_->status();
    if (!st)
      return;
    disrupt_members(*client_, *st, plan_, disrupted_, counts_);
    for (auto it = restart_.begin(); it != restart_.end();) {
      if (testing::state_of(*st, *it) != member_state::up && !roles_.start(*it)) {
        ++restarts_;
        disrupted_.erase(*it);
        it = restart_.erase(it);
      } else {
        ++it;
      }
    }
  }

  const soak_options& o_;
  std::string sync_dir_;
  std::vector<double> kills_s_;
  std::vector<std::string> victims_;
  disruption plan_;
  roles_run roles_;
  bool started_ = false;
  std::unique_ptr<ops::session> client_;
  std::set<std::string> disrupted_;
  std::map<std::string, chaos_stats> counts_;
  /// Tasks killed and not yet started again.
  std::vector<std::string> restart_;
  /// Resumes from a sync: the chiefs' together, the running chief's, and those due: one after
  /// each kill of the chief or the ps that came while none was awaited.
  size_t resumes_ = 0, chief_resumes_ = 0, resumes_due_ = 0;
  bool awaiting_resume_ = false;
  /// Processes started again: killed tasks, and every task of a job started anew.
  uint32_t restarts_ = 0;
};

} // namespace

caf::expected<soak_result> run_online_cluster_soak(const soak_options& o,
                                                   const std::string& binary) {
  if (o.nodes < 3)
    return make_error(errc::invalid_config,
                      "soak: the online-cluster job needs at least 3 serving nodes: the seed "
                      "and a member for each of 2 copies");
  return run_online_soaks(
    o, binary, [&](const std::string& dir, uint16_t port, const std::vector<double>& kills_s) {
      auto job = std::make_shared<cluster_job>(o, binary, dir, port, kills_s);
      return online_job{[job](online_run& run) { return job->start(run); },
                        [job](online_run& run) { job->drive(run); },
                        [job] { job->stop(); },
                        job->sync_dir(),
                        {"--embedding-shards", "1", "--replicas", "2", "--sync-dir",
                         dir + "/serve-sync", "--http-threads", "2", "--threads", "2"},
                        [job](soak_result& r) { job->report(r); }};
    });
}

} // namespace darcy::apps
