#include "apps/chaos/online_watch.hpp"

#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <random>
#include <thread>

#include <signal.h>

#include "apps/chaos/serving_soak.hpp"
#include "compute/estimator/metrics.hpp"
#include "messages/error.hpp"
#include "ops/ctr/ctr_input.hpp"
#include "ops/ctr/ctr_stream.hpp"
#include "runtime/host_port.hpp"
#include "runtime/http/http_client.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::apps {

namespace {

namespace est = ops::estimator;
using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr double qps = 20;
constexpr uint32_t instances = 8;
constexpr uint32_t probe_rows = 2000;
constexpr uint32_t score_batch = 100;
/// A request still refused after this long fails the run; a refused one waits `refused_wait`.
constexpr auto answer_patience = 60s;
constexpr auto refused_wait = 20ms;
/// How long serving may take to reach training's last sync once training has ended.
constexpr auto final_patience = 60s;

/// POSTs `body` (of `rows` instances) to the model's :predict until it is answered in full (see
/// ask_until_answered).
caf::expected<nlohmann::json> predict(uint16_t port, const std::string& body, size_t rows,
                                      online_run& run) {
  return ask_until_answered(
    port,
    runtime::http_request_text("POST", std::string{"/v1/models/"} + online_model + ":predict", "",
                               body),
    [rows](const nlohmann::json& j) {
      return !j.value("partial", false) && j.contains("predictions") &&
             j["predictions"].size() == rows;
    },
    refused_wait, answer_patience, run.stop, run.asked_again);
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

/// The sync GET /v1/models/MODEL reports (empty: none yet, or no answer).
std::string served_sync(uint16_t port) {
  auto j = nlohmann::json::parse(
    runtime::http_body(runtime::http_exchange(
      port, runtime::http_request_text("GET", std::string{"/v1/models/"} + online_model, ""))),
    nullptr, false);
  return j.is_object() && j.contains("sync") ? j["sync"].value("checkpoint", "") : "";
}

/// One line on how far a run got, for a run that did not end: training ended or not, the syncs
/// it wrote, the one serving reports (`served`) and the client's answers. run.mutex held.
std::string where_the_run_is(const online_run& run, const std::string& served) {
  auto since = [&](steady::time_point t) {
    return std::to_string(std::chrono::duration<double>(t - run.begun).count()).substr(0, 5) + " s";
  };
  std::string out = run.training_ended != steady::time_point{}
                      ? "training ended at " + since(run.training_ended)
                      : "training still running";
  out += "; " + std::to_string(run.syncs.size()) + " syncs written";
  if (!run.syncs.empty())
    out += " (the last at step " + std::to_string(run.syncs.back().step) + ", " +
           since(run.syncs.back().seen) + ")";
  out += "; serving at sync '" + served + "'; " + std::to_string(run.answers.size()) + " answers";
  if (!run.answers.empty())
    out += " (the last at " + since(run.answers.back().at) + ")";
  return out + "; " + std::to_string(run.asked_again.load()) + " asked again";
}

/// One run on its own cluster: training, serving and the client, under run_chaos (`soaked`)
/// or left alone. Answers its seconds, or the failure of its start; what it saw is in `run`.
caf::expected<double> run_once(const soak_options& o, const std::string& binary,
                               const online_probe& probe, online_job& job, uint16_t port,
                               const std::string& dir, bool soaked, double clean_seconds,
                               online_run& run, soak_result& result) {
  std::error_code ec;
  std::filesystem::create_directories(dir + "/exports", ec);
  auto nodes = start_soak_cluster(o, binary);
  if (!nodes)
    return std::move(nodes.error());
  std::optional<serve_run> serve;
  std::thread client;
  std::future<void> driver;
  auto start_job = [&]() -> caf::expected<soak_job> {
    run.begun = steady::now();
    if (auto err = job.start(run))
      return err;
    std::vector<std::string> args{"--exports", dir + "/exports", "--listen",
                                  "127.0.0.1:" + std::to_string(port)};
    args.insert(args.end(), job.serve_flags.begin(), job.serve_flags.end());
    auto started = start_serve(
      binary, args, **nodes, online_model,
      [](const nlohmann::json& status) { return status.value("embeddings", "") == "shards"; });
    if (!started)
      return std::move(started.error());
    serve.emplace(std::move(*started));
    run.serving_began = steady::now();
    client = std::thread{[&] { run_online_client(port, probe, run); }};
    driver = std::async(std::launch::async, [&] {
      job.drive(run);
      if (!run.stop)
        finish_online_run(job.sync_dir, port, probe, run);
    });
    return soak_job{[&](std::chrono::milliseconds wait) -> caf::expected<int> {
                      auto err = serve->process->read_stderr(); // all of it so far
                      {
                        std::lock_guard<std::mutex> guard{run.mutex};
                        run.serve_log = last_chars(err, 20000);
                      }
                      if (auto code = serve->process->wait(0ms))
                        run.fail("darcy serve exited " + std::to_string(*code));
                      if (driver.wait_for(wait) != std::future_status::ready)
                        return make_error(errc::timeout, "training is still going");
                      std::lock_guard<std::mutex> guard{run.mutex};
                      return run.failure.empty() ? 0 : 1;
                    },
                    [&] {
                      auto served = served_sync(port);
                      std::lock_guard<std::mutex> guard{run.mutex};
                      return where_the_run_is(run, served) + "\n" + run.failure +
                             "\ntraining's last messages:\n" + last_chars(run.training_log, 4000) +
                             "\ndarcy serve's last messages:\n" + last_chars(run.serve_log, 2000);
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
  } else if (auto started = start_job(); !started) {
    run.fail(to_string(started.error()));
  } else {
    driver.wait();
    code = *started->wait(0ms);
  }
  auto seconds = std::chrono::duration<double>(steady::now() - run.begun).count();
  run.stop = true;
  if (driver.valid())
    driver.wait();
  if (client.joinable())
    client.join();
  job.stop();
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

} // namespace

std::vector<std::string> online_sync_flags(const std::string& dir, uint16_t port) {
  return {"--sync-dir",
          dir + "/sync",
          "--sync-every",
          std::to_string(online_sync_every_s),
          "--dense-sync-every",
          std::to_string(online_dense_sync_every_s),
          "--export",
          dir + "/exports/" + online_model,
          "--sync-to",
          "http://127.0.0.1:" + std::to_string(port) + "/v1/models/" + online_model};
}

void online_run::fail(const std::string& why) {
  std::lock_guard<std::mutex> guard{mutex};
  if (failure.empty())
    failure = why;
  stop = true;
}

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

caf::expected<online_probe> make_online_probe(uint64_t seed, uint64_t stream_rows) {
  ops::ctr::ctr_stream_options so;
  so.generator.seed = seed;
  so.generator.max_ids = online_max_ids;
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
  online_probe p;
  p.table = est::example_table{std::move(b.features), std::move(b.labels)};
  p.client_bodies = bodies_of(p.table, instances);
  p.score_bodies = bodies_of(p.table, score_batch);
  return p;
}

void run_online_client(uint16_t port, const online_probe& probe, online_run& run) {
  auto period =
    std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(1 / qps));
  auto next = steady::now();
  for (size_t r = 0; !run.stop; ++r) {
    std::this_thread::sleep_until(next);
    next = std::max(next + period, steady::now() - 1s); // no burst after a long refusal
    auto j = predict(port, probe.client_bodies[r % probe.client_bodies.size()], instances, run);
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

void record_sync(const std::string& sync_dir, online_run& run) {
  auto head = stores::checkpoint_dir{sync_dir}.read_manifest();
  if (!head)
    return;
  std::lock_guard<std::mutex> guard{run.mutex};
  if (run.syncs.empty() || run.syncs.back().checkpoint != head->checkpoint)
    run.syncs.push_back({head->checkpoint, head->step, steady::now()});
}

void finish_online_run(const std::string& sync_dir, uint16_t port, const online_probe& probe,
                       online_run& run) {
  record_sync(sync_dir, run);
  auto last = stores::checkpoint_dir{sync_dir}.read_manifest();
  if (!last)
    return run.fail("training ended without a sync: " + to_string(last.error()));
  auto until = steady::now() + final_patience;
  std::string served;
  while ((served = served_sync(port)) != last->checkpoint && steady::now() < until && !run.stop)
    std::this_thread::sleep_for(online_poll);
  if (served != last->checkpoint) {
    // On the failure's own line, which a test's report keeps when it cuts the logs below.
    std::string pushed, warned;
    {
      std::lock_guard<std::mutex> guard{run.mutex};
      pushed = last_line_with(run.training_log, "sync push");
      warned = last_line_with(run.serve_log, "[warning]");
    }
    return run.fail("serving stayed at sync '" + served + "' after training ended at '" +
                    last->checkpoint +
                    "'; training's last push refused: " + (pushed.empty() ? "none" : pushed) +
                    "; serve's last warning: " + (warned.empty() ? "none" : warned));
  }
  std::vector<double> p, y;
  for (size_t b = 0; b < probe.score_bodies.size(); ++b) {
    auto j = predict(port, probe.score_bodies[b], score_batch, run);
    if (!j)
      return run.fail("the held-out rows: " + to_string(j.error()));
    for (size_t i = 0; i < score_batch; ++i) {
      p.push_back((*j)["predictions"][i][0].get<double>());
      y.push_back(probe.table.labels(Eigen::Index(b * score_batch + i), 0));
    }
  }
  auto auc = *compute::estimator::streaming_metric::make(compute::estimator::metric_kind::auc_roc);
  if (auto err = auc.update({p, y}))
    return run.fail("the held-out rows' AUC: " + to_string(make_error(err)));
  run.probe_auc = auc.value();
  run.stop = true;
}

void judge_online_run(online_run& run, const std::vector<steady::time_point>& kills, bool lag_check,
                      soak_result& r) {
  auto v =
    judge_online_answers(run.syncs, run.answers, kills,
                         std::chrono::duration<double>(online_sync_every_s), 2 * online_poll);
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

caf::expected<soak_result> run_online_soaks(const soak_options& o, const std::string& binary,
                                            const online_job_maker& make) {
  auto probe = make_online_probe(o.seed, o.stream_rows);
  if (!probe)
    return std::move(probe.error());
  auto free_port = []() -> caf::expected<uint16_t> {
    if (auto port = runtime::free_loopback_port())
      return port;
    return make_error(errc::io_error, "soak: no free port on 127.0.0.1");
  };
  soak_result result;
  soak_log(o, "clean run of " + o.job + " with " + std::to_string(o.nodes) + " serving nodes");
  online_run clean;
  auto port = free_port();
  if (!port)
    return std::move(port.error());
  // Absolute folders: serving sends its shards' nodes the files they lack at the same paths
  // (ops/ship_files.hpp), as it would to other hosts.
  auto root = std::filesystem::absolute(o.dir).string();
  auto clean_job = make(root + "/clean", *port, {});
  auto clean_seconds =
    run_once(o, binary, *probe, clean_job, *port, root + "/clean", false, 0, clean, result);
  if (!clean_seconds)
    return std::move(clean_seconds.error());
  soak_result clean_judged;
  judge_online_run(clean, {}, o.lag_check, clean_judged);
  if (!clean.failure.empty())
    return make_error(errc::io_error, "soak: the clean run failed: " + clean.failure +
                                        "\ntraining's last messages:\n" +
                                        last_chars(clean.training_log, 3000));
  result.clean_seconds = *clean_seconds;
  result.clean_quality = clean.probe_auc;

  // Training's kills: seeded apart from the nodes', within 20-70% of its clean run.
  std::mt19937_64 rng{o.seed * 7919 + 17};
  auto kills_s =
    kill_times(o, std::chrono::duration<double>(clean.training_ended - clean.serving_began).count(),
               rng, 0.2, 0.7);
  online_run soaked;
  port = free_port();
  if (!port)
    return std::move(port.error());
  auto job = make(root + "/soaked", *port, kills_s);
  auto seconds = run_once(o, binary, *probe, job, *port, root + "/soaked", true,
                          result.clean_seconds, soaked, result);
  if (!seconds)
    return std::move(seconds.error());
  if (job.report)
    job.report(result);
  result.training_kills = static_cast<uint32_t>(soaked.training_kills.size());
  auto kills = soaked.training_kills;
  for (auto at : result.kill_at_s)
    kills.push_back(soaked.begun + std::chrono::duration_cast<steady::duration>(
                                     std::chrono::duration<double>(at)));
  judge_online_run(soaked, kills, o.lag_check, result);
  result.lost_work = soaked.asked_again;
  result.completed = soaked.failure.empty() && result.failure.empty();
  if (!result.completed && result.failure.empty())
    result.failure = soaked.failure + "\ntraining's last messages:\n" +
                     last_chars(soaked.training_log, 3000) + "\ndarcy serve's last messages:\n" +
                     last_chars(soaked.serve_log, 3000);
  if (result.completed) {
    result.quality = soaked.probe_auc;
    result.quality_delta = (result.quality - result.clean_quality) / result.clean_quality;
  }
  return result;
}

std::string last_chars(const std::string& text, size_t n) {
  return text.substr(text.size() > n ? text.size() - n : 0);
}

std::string line_at(const std::string& text, size_t at) {
  auto begin = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  begin = begin == std::string::npos ? 0 : begin + 1;
  auto end = text.find('\n', at);
  return text.substr(begin, end == std::string::npos ? end : end - begin);
}

std::string last_line_with(const std::string& text, std::string_view needle) {
  auto at = text.rfind(needle);
  return at == std::string::npos ? std::string{} : last_chars(line_at(text, at), 500);
}

} // namespace darcy::apps
