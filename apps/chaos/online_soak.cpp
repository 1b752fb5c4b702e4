#include "apps/chaos/online_soak.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <signal.h>

#include "apps/chaos/serving_soak.hpp"
#include "compute/estimator/metrics.hpp"
#include "messages/error.hpp"
#include "ops/ctr/ctr_input.hpp"
#include "ops/ctr/ctr_stream.hpp"
#include "runtime/http/http_client.hpp"
#include "runtime/process/process.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::apps {

namespace {

namespace fs = std::filesystem;
namespace est = ops::estimator;
using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

const std::string model_name = "ctr";
constexpr uint64_t window_rows = 2000;
constexpr uint64_t max_ids = 20'000;
constexpr double sync_every_s = 2;
constexpr double dense_sync_every_s = 4;
constexpr double qps = 20;
constexpr uint32_t instances = 8;
constexpr uint32_t probe_rows = 2000;
constexpr uint32_t probe_batch = 100;
/// How often the driver reads the sync directory's newest checkpoint: an answer may name a
/// sync up to two polls before the driver saw it written.
constexpr auto poll = 50ms;
/// A request still refused after this long fails the run; a refused one waits `refused_wait`.
constexpr auto answer_patience = 60s;
constexpr auto refused_wait = 20ms;
/// How long the first window (and its export) and serving's start may take.
constexpr auto first_window_patience = 120s;
/// How long serving may take to reach training's last sync once training has ended.
constexpr auto final_patience = 60s;

/// What one run saw; the client and the driver share it.
struct online_run {
  std::mutex mutex;
  std::vector<online_answer> answers;
  std::vector<online_sync_seen> syncs;
  std::vector<steady::time_point> training_kills;
  std::atomic<uint64_t> asked_again{0};
  std::atomic<bool> stop{false};
  std::string failure;
  /// What the training process and `darcy serve` wrote to stderr, for a failure's report.
  std::string training_log, serve_log;
  double probe_auc = 0;
  /// When the job started (run_chaos's clock starts with it), serving began and training ended.
  steady::time_point begun{};
  steady::time_point serving_began{};
  steady::time_point training_ended{};

  void fail(const std::string& why) {
    std::lock_guard<std::mutex> guard{mutex};
    if (failure.empty())
      failure = why;
    stop = true;
  }
};

/// POSTs `body` (of `rows` instances) to the model's :predict until it is answered in full (see
/// ask_until_answered).
caf::expected<nlohmann::json> predict(uint16_t port, const std::string& body, size_t rows,
                                      online_run& run) {
  return ask_until_answered(
    port, runtime::http_request_text("POST", "/v1/models/" + model_name + ":predict", "", body),
    [rows](const nlohmann::json& j) {
      return !j.value("partial", false) && j.contains("predictions") &&
             j["predictions"].size() == rows;
    },
    refused_wait, answer_patience, run.stop, run.asked_again);
}

/// Asks :predict `qps` times a second, the bodies in turn, and records the sync each answer
/// names, until run.stop.
void run_client(uint16_t port, const std::vector<std::string>& bodies, online_run& run) {
  auto period =
    std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(1 / qps));
  auto next = steady::now();
  for (size_t r = 0; !run.stop; ++r) {
    std::this_thread::sleep_until(next);
    next = std::max(next + period, steady::now() - 1s); // no burst after a long refusal
    auto j = predict(port, bodies[r % bodies.size()], instances, run);
    if (!j) {
      if (!run.stop)
        run.fail("request " + std::to_string(r) + ": " + to_string(j.error()));
      return;
    }
    online_answer a{steady::now(), "", -1};
    if (j->contains("sync")) {
      a.checkpoint = (*j)["sync"].value("checkpoint", "");
      a.step = (*j)["sync"].value("step", int64_t{-1});
    }
    std::lock_guard<std::mutex> guard{run.mutex};
    run.answers.push_back(std::move(a));
  }
}

/// Records the newest checkpoint of `sync_dir` when it is new.
void record_sync(const std::string& sync_dir, online_run& run) {
  auto head = stores::checkpoint_dir{sync_dir}.read_manifest();
  if (!head)
    return;
  std::lock_guard<std::mutex> guard{run.mutex};
  if (run.syncs.empty() || run.syncs.back().checkpoint != head->checkpoint)
    run.syncs.push_back({head->checkpoint, head->step, steady::now()});
}

/// The held-out rows: the `probe_rows` that follow the stream's first `stream_rows`, from the
/// same generator.
caf::expected<est::example_table> probe_table(uint64_t seed, uint64_t stream_rows) {
  ops::ctr::ctr_stream_options so;
  so.generator.seed = seed;
  so.generator.max_ids = max_ids;
  auto stream = ops::ctr::open_ctr_stream("generate", so);
  if (!stream)
    return std::move(stream.error());
  stores::ctr_row row;
  ops::ctr::ctr_batch_builder rows;
  for (uint64_t i = 0; i < stream_rows + probe_rows; ++i) {
    auto got = (*stream)->next(row);
    if (!got)
      return std::move(got.error());
    if (i >= stream_rows)
      rows.add(row);
  }
  auto b = rows.take();
  return est::example_table{std::move(b.features), std::move(b.labels)};
}

/// The :predict bodies of consecutive `per_body` rows of `t`.
std::vector<std::string> bodies_of(const est::example_table& t, uint32_t per_body) {
  std::vector<std::string> out;
  for (uint32_t first = 0; first + per_body <= t.labels.rows(); first += per_body) {
    std::vector<uint32_t> rows(per_body);
    for (uint32_t i = 0; i < per_body; ++i)
      rows[i] = first + i;
    out.push_back(nlohmann::json{{"instances", ops::ctr::ctr_instances(t, rows)}}.dump());
  }
  return out;
}

/// The sync GET /v1/models/ctr reports (empty: none yet, or no answer).
std::string served_sync(uint16_t port) {
  auto j = nlohmann::json::parse(
    runtime::http_body(runtime::http_exchange(
      port, runtime::http_request_text("GET", "/v1/models/" + model_name, ""))),
    nullptr, false);
  return j.is_object() && j.contains("sync") ? j["sync"].value("checkpoint", "") : "";
}

/// One run's processes and inputs.
struct online_setup {
  std::string binary;
  std::string dir;
  uint64_t seed = 1;
  uint64_t stream_rows = 0;
  const est::example_table* probe = nullptr;
  std::vector<std::string> client_bodies;
  std::vector<std::string> probe_bodies;
  /// Seconds after serving began at which the training process is SIGKILLed.
  std::vector<double> training_kills_s;
};

std::vector<std::string> trainer_argv(const online_setup& s, uint16_t port) {
  return {s.binary,
          "estimator",
          "ctr",
          "--stream",
          "generate",
          "--window",
          std::to_string(window_rows),
          "--stream-rows",
          std::to_string(s.stream_rows),
          "--max-ids",
          std::to_string(max_ids),
          "--threads",
          "1",
          "--seed",
          std::to_string(s.seed),
          "--sync-dir",
          s.dir + "/sync",
          "--sync-every",
          std::to_string(sync_every_s),
          "--dense-sync-every",
          std::to_string(dense_sync_every_s),
          "--export",
          s.dir + "/exports/" + model_name,
          "--sync-to",
          "http://127.0.0.1:" + std::to_string(port) + "/v1/models/" + model_name};
}

/// The last `n` characters of `text`.
std::string tail(const std::string& text, size_t n = 1500) {
  return text.substr(text.size() > n ? text.size() - n : 0);
}

/// Keeps the training process going until its stream ends, SIGKILLing it at s's times and
/// starting it again at once; then waits for serving to reach its last sync and scores the
/// probe rows. Ends with run.stop; a failure is in run.failure.
void drive(const online_setup& s, std::optional<runtime::child_process>& trainer,
           const std::vector<std::string>& argv, uint16_t port, online_run& run) {
  auto sync_dir = s.dir + "/sync";
  size_t next_kill = 0;
  std::string earlier; // the stderr of the training processes killed before this one
  auto drain = [&] {
    trainer->wait_for_line("\x01", 1ms); // its window lines
    auto err = trainer->read_stderr();   // all of it so far
    std::lock_guard<std::mutex> guard{run.mutex};
    run.training_log = tail(earlier + err, 20000);
  };
  while (!run.stop) {
    record_sync(sync_dir, run);
    drain();
    if (auto code = trainer->wait(0ms)) {
      drain();
      if (*code != 0)
        return run.fail("the training process exited " + std::to_string(*code) + ": " +
                        tail(run.training_log));
      run.training_ended = steady::now();
      break;
    }
    if (next_kill < s.training_kills_s.size() &&
        std::chrono::duration<double>(steady::now() - run.serving_began).count() >=
          s.training_kills_s[next_kill]) {
      ++next_kill;
      trainer->signal(SIGKILL);
      trainer->wait(30s);
      drain();
      {
        std::lock_guard<std::mutex> guard{run.mutex};
        run.training_kills.push_back(steady::now());
        earlier = run.training_log + "[soak: the training process was SIGKILLed]\n";
      }
      auto again = runtime::child_process::start(argv);
      if (!again)
        return run.fail("the training process did not start again: " + to_string(again.error()));
      trainer.emplace(std::move(*again));
      continue;
    }
    std::this_thread::sleep_for(poll);
  }
  if (run.stop)
    return;
  record_sync(sync_dir, run);
  auto last = stores::checkpoint_dir{sync_dir}.read_manifest();
  if (!last)
    return run.fail("training ended without a sync: " + to_string(last.error()));
  auto until = steady::now() + final_patience;
  std::string served;
  while ((served = served_sync(port)) != last->checkpoint && steady::now() < until && !run.stop)
    std::this_thread::sleep_for(poll);
  if (served != last->checkpoint)
    return run.fail("serving stayed at sync '" + served + "' after training ended at '" +
                    last->checkpoint + "'");
  // The last served model's AUC on the held-out rows.
  std::vector<double> p, y;
  for (size_t b = 0; b < s.probe_bodies.size(); ++b) {
    auto j = predict(port, s.probe_bodies[b], probe_batch, run);
    if (!j)
      return run.fail("the held-out rows: " + to_string(j.error()));
    for (size_t i = 0; i < probe_batch; ++i) {
      p.push_back((*j)["predictions"][i][0].get<double>());
      y.push_back(s.probe->labels(Eigen::Index(b * probe_batch + i), 0));
    }
  }
  auto auc = *compute::estimator::streaming_metric::make(compute::estimator::metric_kind::auc_roc);
  if (auto err = auc.update({p, y}))
    return run.fail("the held-out rows' AUC: " + to_string(make_error(err)));
  run.probe_auc = auc.value();
  run.stop = true;
}

/// One run on its own cluster: training, serving and the client, with `chaos` (soaked) or left
/// alone. Answers its seconds, or the failure of its start; what it saw is in `run`.
caf::expected<double> run_once(const soak_options& o, const online_setup& s, bool soaked,
                               double clean_seconds, online_run& run, soak_result& result) {
  std::error_code ec;
  fs::create_directories(s.dir + "/exports", ec);
  auto nodes = start_soak_cluster(o, s.binary);
  if (!nodes)
    return std::move(nodes.error());
  auto port = runtime::free_loopback_port();
  if (port == 0)
    return make_error(errc::io_error, "soak: no free port on 127.0.0.1");
  auto argv = trainer_argv(s, port);
  std::optional<runtime::child_process> trainer;
  std::optional<serve_run> serve;
  std::thread client;
  std::future<void> driver;
  auto start_job = [&]() -> caf::expected<soak_job> {
    run.begun = steady::now();
    auto t = runtime::child_process::start(argv);
    if (!t)
      return std::move(t.error());
    trainer.emplace(std::move(*t));
    // Its first window's line comes after the export that serving starts from.
    if (auto line = trainer->wait_for_line("\"window\"", first_window_patience); !line)
      return make_error(errc::io_error,
                        "soak: the first window did not end: " + tail(trainer->read_stderr()));
    auto started = start_serve(
      s.binary,
      {"--exports", s.dir + "/exports", "--listen", "127.0.0.1:" + std::to_string(port),
       "--embedding-shards", "2", "--http-threads", "2", "--threads", "2"},
      **nodes, model_name,
      [](const nlohmann::json& status) { return status.value("embeddings", "") == "shards"; });
    if (!started)
      return std::move(started.error());
    serve.emplace(std::move(*started));
    run.serving_began = steady::now();
    client = std::thread{[&] { run_client(port, s.client_bodies, run); }};
    driver = std::async(std::launch::async, [&] { drive(s, trainer, argv, port, run); });
    return soak_job{[&](std::chrono::milliseconds wait) -> caf::expected<int> {
                      auto err = serve->process->read_stderr(); // all of it so far
                      {
                        std::lock_guard<std::mutex> guard{run.mutex};
                        run.serve_log = tail(err, 20000);
                      }
                      if (driver.wait_for(wait) != std::future_status::ready)
                        return make_error(errc::timeout, "training is still going");
                      std::lock_guard<std::mutex> guard{run.mutex};
                      return run.failure.empty() ? 0 : 1;
                    },
                    [&] {
                      std::lock_guard<std::mutex> guard{run.mutex};
                      return run.failure + "\n" + tail(run.serve_log);
                    },
                    [&] { run.stop = true; }};
  };
  std::optional<int> code;
  if (soaked) {
    auto c = run_chaos(o, **nodes, clean_seconds, start_job, result);
    if (!c)
      run.fail(to_string(c.error()));
    else
      code = *c;
  } else if (auto job = start_job(); !job) {
    run.fail(to_string(job.error()));
  } else {
    driver.wait();
    code = *job->wait(0ms);
  }
  auto seconds = std::chrono::duration<double>(steady::now() - run.begun).count();
  run.stop = true;
  if (driver.valid())
    driver.wait();
  if (client.joinable())
    client.join();
  if (trainer) {
    trainer->signal(SIGKILL);
    trainer->wait(30s);
  }
  if (serve) {
    serve->process->signal(SIGTERM);
    serve->process->wait(30s);
  }
  if (!code)
    run.fail(result.failure.empty() ? "the run did not end" : result.failure);
  return seconds;
}

/// The syncs, the kills and the answers' lags over a second, in seconds from the job's start:
/// what a failure report needs to tell a slow sync from a lost one.
std::string describe_lags(const online_run& run, const std::vector<steady::time_point>& kills) {
  auto at = [&](steady::time_point t) {
    return std::to_string(std::chrono::duration<double>(t - run.begun).count()).substr(0, 6);
  };
  std::string out = "\nsyncs written (s):";
  for (auto& w : run.syncs)
    out += " " + at(w.seen);
  out += "\nkills (s):";
  for (auto k : kills)
    out += " " + at(k);
  out += "\nanswers behind a newer sync by over 1 s (s: served step, lag):";
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < run.syncs.size(); ++i)
    index[run.syncs[i].checkpoint] = i;
  for (auto& a : run.answers) {
    auto it = index.find(a.checkpoint);
    size_t newer = a.checkpoint.empty() ? 0 : it == index.end() ? run.syncs.size() : it->second + 1;
    if (newer < run.syncs.size() && a.at - run.syncs[newer].seen > 1s)
      out += " " + at(a.at) + ": " + std::to_string(a.step) + ", " +
             std::to_string(std::chrono::duration<double>(a.at - run.syncs[newer].seen).count())
               .substr(0, 4);
  }
  return out;
}

/// Fills r's ahead_answers, stale_answers, stale_max_s and caught_up_s from what `run` saw,
/// and run.failure when a check fails (the lag's only with lag_check); `kills` are the times
/// of every kill.
void judge(online_run& run, const std::vector<steady::time_point>& kills, bool lag_check,
           soak_result& r) {
  auto v = judge_online_answers(run.syncs, run.answers, kills,
                                std::chrono::duration<double>(sync_every_s), 2 * poll);
  r.ahead_answers = v.ahead;
  r.stale_answers = v.stale;
  r.stale_max_s = v.stale_max_s;
  r.caught_up_s = v.caught_up_s.value_or(0);
  if (!run.failure.empty())
    return;
  if (v.ahead > 0)
    run.failure = std::to_string(v.ahead) + " answers served a sync training had not written";
  else if (!v.caught_up_s)
    run.failure = "serving never served the newest sync after the last kill";
  else if (v.stale > 0 && lag_check)
    run.failure = std::to_string(v.stale) +
                  " answers served a sync older than the newest by more than two intervals" +
                  describe_lags(run, kills);
}

} // namespace

online_verdict judge_online_answers(const std::vector<online_sync_seen>& syncs,
                                    const std::vector<online_answer>& answers,
                                    const std::vector<steady::time_point>& kills,
                                    std::chrono::duration<double> sync_every,
                                    steady::duration slack) {
  online_verdict v;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < syncs.size(); ++i)
    index[syncs[i].checkpoint] = i;
  auto last_kill =
    kills.empty() ? steady::time_point{} : *std::max_element(kills.begin(), kills.end());
  for (auto& a : answers) {
    std::optional<size_t> at; // none: the export, older than every sync
    if (!a.checkpoint.empty()) {
      auto it = index.find(a.checkpoint);
      if (it == index.end() || syncs[it->second].step != a.step ||
          syncs[it->second].seen > a.at + slack) {
        ++v.ahead;
        continue;
      }
      at = it->second;
    }
    auto newer = at ? *at + 1 : 0;
    std::chrono::duration<double> lag{0};
    if (newer < syncs.size() && syncs[newer].seen < a.at)
      lag = a.at - syncs[newer].seen;
    if (a.at < last_kill)
      continue;
    if (!v.caught_up_s && lag.count() == 0)
      v.caught_up_s = kills.empty() ? 0 : std::chrono::duration<double>(a.at - last_kill).count();
    if (!v.caught_up_s)
      continue;
    v.stale_max_s = std::max(v.stale_max_s, lag.count());
    v.stale += lag > 2 * sync_every;
  }
  return v;
}

caf::expected<soak_result> run_online_soak(const soak_options& o, const std::string& binary) {
  auto probe = probe_table(o.seed, o.stream_rows);
  if (!probe)
    return std::move(probe.error());
  online_setup s;
  s.binary = binary;
  s.seed = o.seed;
  s.stream_rows = o.stream_rows;
  s.probe = &*probe;
  s.client_bodies = bodies_of(*probe, instances);
  s.probe_bodies = bodies_of(*probe, probe_batch);

  soak_result result;
  soak_log(o, "clean run of online training on " + std::to_string(o.nodes) + " nodes");
  s.dir = o.dir + "/clean";
  online_run clean;
  auto clean_seconds = run_once(o, s, false, 0, clean, result);
  if (!clean_seconds)
    return std::move(clean_seconds.error());
  soak_result clean_judged;
  judge(clean, {}, o.lag_check, clean_judged);
  if (!clean.failure.empty())
    return make_error(errc::io_error, "soak: the clean run failed: " + clean.failure);
  result.clean_seconds = *clean_seconds;
  result.clean_quality = clean.probe_auc;

  s.dir = o.dir + "/soaked";
  // The training process's kills: seeded apart from the nodes', within 20–70% of its clean run.
  std::mt19937_64 rng{o.seed * 7919 + 17};
  s.training_kills_s =
    kill_times(o, std::chrono::duration<double>(clean.training_ended - clean.serving_began).count(),
               rng, 0.2, 0.7);
  online_run soaked;
  auto seconds = run_once(o, s, true, result.clean_seconds, soaked, result);
  if (!seconds)
    return std::move(seconds.error());
  result.training_kills = static_cast<uint32_t>(soaked.training_kills.size());
  auto kills = soaked.training_kills;
  for (auto at : result.kill_at_s)
    kills.push_back(soaked.begun + std::chrono::duration_cast<steady::duration>(
                                     std::chrono::duration<double>(at)));
  judge(soaked, kills, o.lag_check, result);
  result.lost_work = soaked.asked_again;
  result.completed = soaked.failure.empty() && result.failure.empty();
  if (!result.completed && result.failure.empty())
    result.failure = soaked.failure + "\ntraining's last messages:\n" +
                     tail(soaked.training_log, 3000) + "\ndarcy serve's last messages:\n" +
                     tail(soaked.serve_log, 3000);
  if (result.completed) {
    result.quality = soaked.probe_auc;
    result.quality_delta = (result.quality - result.clean_quality) / result.clean_quality;
  }
  return result;
}

} // namespace darcy::apps
