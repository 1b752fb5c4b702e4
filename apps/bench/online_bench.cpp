#include "apps/bench/online_bench.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "apps/bench/online_cluster.hpp"
#include "apps/bench/online_common.hpp"
#include "apps/estimator/ctr.hpp"
#include "messages/error.hpp"
#include "ops/ctr/ctr_input.hpp"
#include "runtime/http/http_client.hpp"
#include "runtime/process/process.hpp"

namespace darcy::apps {

namespace {

namespace fs = std::filesystem;
namespace est = ops::estimator;
using namespace online;
using namespace std::chrono_literals;

constexpr const char* model_name = "ctr";

uint64_t key_hash(size_t field, const std::string& key) {
  return std::hash<std::string>{}(key)*31 + field;
}

/// A window of the stream as the client and the analysis see it.
struct window_state {
  uint64_t window = 0;
  std::shared_ptr<const est::example_table> table;
  /// The rows the client asked for, with the served score; paired with the frozen export's
  /// scores once the window is trained.
  struct served_row {
    uint32_t row = 0;
    float score = 0;
    float label = 0;
  };
  std::vector<served_row> served;
  std::vector<float> frozen_scores;
  steady::time_point trained_at{};
};

/// A trained window whose rows no served answer has used yet.
struct pending_freshness {
  uint64_t step = 0; // the sync step that holds the window's training
  std::unordered_set<uint64_t> keys;
  std::vector<steady::time_point> step_ends;
};

/// Everything the trainer thread and the client thread share.
struct shared_state {
  std::mutex mutex;
  std::shared_ptr<window_state> current; // the window being trained; null between windows
  std::map<uint64_t, std::shared_ptr<window_state>> windows;
  std::vector<pending_freshness> pending;
  std::vector<double> freshness_s;
  std::vector<std::pair<steady::time_point, double>> freshness_at; // (answered, seconds)
  std::vector<std::pair<steady::time_point, steady::time_point>> pushes;
  std::vector<answer_record> answers;
  std::atomic<bool> stop{false};
};

/// The :predict body of rows `rows` of `t`, and the hashes of their keys.
std::string predict_body(const est::example_table& t, const std::vector<uint32_t>& rows,
                         std::unordered_set<uint64_t>& keys) {
  for (auto r : rows)
    for (size_t f = 0; f < compute::ctr_cat_fields; ++f)
      for (auto& s : t.features.at(ops::ctr::ctr_field_key(f)).strings[r])
        keys.insert(key_hash(f, s));
  return nlohmann::json{{"instances", ops::ctr::ctr_instances(t, rows)}}.dump();
}

/// Asks :predict at o.qps for the rows of the current window, in order, until st.stop.
void run_client(const online_bench_options& o, uint16_t port, shared_state& st) {
  auto period =
    std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(1 / o.qps));
  auto next = steady::now();
  std::shared_ptr<window_state> at;
  uint32_t cursor = 0;
  while (!st.stop) {
    std::this_thread::sleep_until(next);
    next += period;
    std::shared_ptr<window_state> w;
    std::shared_ptr<const est::example_table> table; // the trainer drops it once trained
    {
      std::lock_guard<std::mutex> guard{st.mutex};
      w = st.current;
      if (w)
        table = w->table;
    }
    if (!w || !table)
      continue;
    if (w != at)
      at = w, cursor = 0;
    auto n = static_cast<uint32_t>(table->labels.rows());
    std::vector<uint32_t> rows;
    for (size_t i = 0; i < o.instances; ++i)
      rows.push_back(cursor++ % n);
    std::unordered_set<uint64_t> keys;
    auto body = predict_body(*table, rows, keys);
    answer_record a;
    a.sent = steady::now();
    auto raw = runtime::http_exchange(
      runtime::host_port{"127.0.0.1", port},
      runtime::http_request_text("POST", std::string{"/v1/models/"} + model_name + ":predict", "",
                                 body));
    a.answered = steady::now();
    auto j = nlohmann::json::parse(runtime::http_body(raw), nullptr, false);
    a.ok = runtime::http_status(raw) == 200 && j.is_object() && j.contains("predictions") &&
           j["predictions"].size() == rows.size();
    std::lock_guard<std::mutex> guard{st.mutex};
    st.answers.push_back(a);
    if (!a.ok)
      continue;
    for (size_t i = 0; i < rows.size(); ++i)
      w->served.push_back(
        {rows[i], j["predictions"][i][0].get<float>(), table->labels(Eigen::Index(rows[i]), 0)});
    int64_t step = j.contains("sync") ? j["sync"].value("step", int64_t{-1}) : -1;
    // Windows this answer is the first to use: trained by its sync, a key of theirs asked.
    auto& pending = st.pending;
    for (auto p = pending.begin(); p != pending.end();) {
      bool used =
        step >= 0 && uint64_t(step) >= p->step &&
        std::any_of(keys.begin(), keys.end(), [&](uint64_t k) { return p->keys.count(k) > 0; });
      if (!used) {
        ++p;
        continue;
      }
      for (auto end : p->step_ends) {
        auto s = std::chrono::duration<double>(a.answered - end).count();
        st.freshness_s.push_back(s);
        st.freshness_at.emplace_back(a.answered, s);
      }
      p = pending.erase(p);
    }
  }
}

} // namespace

caf::error run_online_bench(const online_bench_options& o) {
  if (o.cluster)
    return run_online_cluster_bench(o);
  std::error_code ec;
  fs::remove_all(o.dir, ec);
  fs::create_directories(o.dir, ec);
  auto dir = fs::absolute(o.dir).string();
  auto self = runtime::sibling_executable("darcy");
  // Two node processes hold the serving shards.
  auto node = [&](const std::string& name, const std::string& join) {
    std::vector<std::string> argv{self,       "node",        "--name",    name,
                                  "--listen", "127.0.0.1:0", "--threads", "1"};
    if (!join.empty())
      argv.insert(argv.end(), {"--join", join});
    return runtime::launch_node(logged(dir + "/" + name + ".log", argv), 60s);
  };
  auto a = node("a", "");
  if (!a)
    return make_error(errc::io_error,
                      "online bench: node a: " + to_string(a.error()) + tail_of(dir + "/a.log"));
  auto seed = runtime::to_string(a->address);
  auto b = node("b", seed);
  if (!b)
    return make_error(errc::io_error,
                      "online bench: node b: " + to_string(b.error()) + tail_of(dir + "/b.log"));
  auto port = runtime::free_loopback_port();
  if (port == 0)
    return make_error(errc::io_error, "online bench: no free port on 127.0.0.1");

  estimator_apps::ctr_options co;
  co.threads = o.threads;
  co.seed = o.seed;
  co.quiet = true;
  estimator_apps::ctr_stream_run run;
  run.source = "generate";
  run.stream.generator.seed = o.seed;
  run.stream.generator.fresh_rate = o.fresh_rate;
  run.stream.generator.max_ids = o.max_ids;
  run.stream.drift_rows = o.drift_rows;
  run.stream.fresh_step = o.fresh_step;
  run.online.window_rows = o.window_rows;
  run.online.sync.dir = dir + "/sync";
  run.online.sync.every = o.sync_every;
  run.online.sync.dense_every = o.dense_sync_every;
  run.online.export_dir = dir + "/exports/" + model_name;
  run.online.sync.push.url =
    "http://127.0.0.1:" + std::to_string(port) + "/v1/models/" + model_name;
  run.online.sync.push.mode = o.push;

  shared_state st;
  std::optional<runtime::child_process> serve;
  std::thread client;
  steady::time_point started{};
  auto serve_log = dir + "/serve.log";
  run.online.before_window = [&](uint64_t w, const est::example_table& rows) -> caf::error {
    if (w == 2) { // the export of window 1 is there: serve it, then ask
      auto p = runtime::child_process::start(
        logged(serve_log, {self, "serve", "--exports", dir + "/exports", "--listen",
                           "127.0.0.1:" + std::to_string(port), "--cluster", seed,
                           "--embedding-shards", "1", "--http-threads", "2", "--threads", "2"}));
      if (!p)
        return std::move(p.error());
      serve.emplace(std::move(*p));
      if (auto err = wait_served({"127.0.0.1", port}, model_name, *serve, serve_log))
        return err;
      started = steady::now();
      client = std::thread{[&] { run_client(o, port, st); }};
    }
    auto state = std::make_shared<window_state>();
    state->window = w;
    state->table = std::make_shared<const est::example_table>(rows);
    std::lock_guard<std::mutex> guard{st.mutex};
    st.windows[w] = state;
    if (w >= 2)
      st.current = state;
    return {};
  };

  std::vector<estimator_apps::ctr_stream_window> trained;
  std::atomic<bool> done{false};
  double last_progress = 0;
  auto on_window = [&](const estimator_apps::ctr_stream_window& r) -> caf::error {
    std::shared_ptr<window_state> state;
    {
      std::lock_guard<std::mutex> guard{st.mutex};
      state = st.windows[r.window];
      st.current = nullptr; // its rows are trained on now
      state->frozen_scores = r.frozen_scores;
      state->trained_at = steady::now();
      if (r.push_sent != steady::time_point{} && r.sync_status == 200)
        st.pushes.emplace_back(r.push_sent, r.push_answered);
    }
    if (r.window >= 2) {
      pending_freshness p{r.rows, {}, r.step_ends};
      for (size_t f = 0; f < compute::ctr_cat_fields; ++f)
        for (auto& row : state->table->features.at(ops::ctr::ctr_field_key(f)).strings)
          for (auto& key : row)
            p.keys.insert(key_hash(f, key));
      std::lock_guard<std::mutex> guard{st.mutex};
      st.pending.push_back(std::move(p));
    }
    {
      std::lock_guard<std::mutex> guard{st.mutex};
      state->table.reset();
    }
    auto copy = r;
    copy.frozen_scores.clear();
    copy.step_ends.clear();
    trained.push_back(std::move(copy));
    auto elapsed = started == steady::time_point{}
                     ? 0
                     : std::chrono::duration<double>(steady::now() - started).count();
    if (!o.quiet && elapsed - last_progress >= 60) {
      last_progress = elapsed;
      std::cout << nlohmann::json{{"online_s", std::round(elapsed)},
                                  {"window", r.window},
                                  {"rows", r.rows},
                                  {"progressive_auc", r.auc},
                                  {"frozen_auc", number(r.frozen_auc)},
                                  {"embedding_rows", r.embedding_rows}}
                     .dump()
                << std::endl;
    }
    if (elapsed >= o.seconds) {
      done = true;
      return make_error(errc::timeout, "online bench: done");
    }
    return {};
  };
  auto err = estimator_apps::run_ctr_stream(co, run, on_window);
  st.stop = true;
  if (client.joinable())
    client.join();
  if (err && !done)
    return err;
  auto end = steady::now();
  if (serve)
    serve->signal(SIGTERM);
  if (started == steady::time_point{})
    return make_error(errc::invalid_config, "online bench: the run ended before serving began");

  // Served predictions against the frozen export's on the same rows, pooled per minute.
  auto minute_of = [&](steady::time_point t) {
    return static_cast<size_t>(std::chrono::duration<double>(t - started).count() / 60);
  };
  struct minute {
    std::vector<double> served, frozen, labels, freshness;
    uint64_t syncs = 0, embedding_rows = 0;
  };
  std::map<size_t, minute> minutes;
  for (auto& [w, state] : st.windows) {
    if (state->served.empty() || state->frozen_scores.empty())
      continue;
    auto& m = minutes[minute_of(state->trained_at)];
    for (auto& r : state->served) {
      m.served.push_back(r.score);
      m.frozen.push_back(state->frozen_scores.at(r.row));
      m.labels.push_back(r.label);
    }
  }
  for (auto& [at, seconds] : st.freshness_at)
    minutes[minute_of(at)].freshness.push_back(seconds);
  // Each delta against a whole snapshot of the tables then: the bytes per row of the last full
  // checkpoint times the rows.
  double delta_bytes = 0, full_bytes = 0, bytes_per_row = 0;
  // What the pushes of deltas sent to serving (rows and dense weights, as messages) against a
  // whole snapshot of the tables then; pushes of a whole chain apart.
  double wire_delta_bytes = 0, wire_full_bytes = 0, whole_chain_bytes = 0;
  uint64_t whole_chain_pushes = 0;
  uint64_t syncs = 0, dense_syncs = 0, full_syncs = 0;
  std::vector<double> rates;
  for (auto& r : trained) {
    rates.push_back(r.examples_per_second);
    if (r.sync_checkpoint.empty())
      continue;
    ++syncs;
    dense_syncs += r.dense_synced ? 1 : 0;
    if (r.sync_full) {
      ++full_syncs;
      bytes_per_row = double(r.sync_bytes) / double(std::max<uint64_t>(r.embedding_rows, 1));
    } else if (bytes_per_row > 0) {
      delta_bytes += double(r.sync_bytes);
      full_bytes += bytes_per_row * double(r.embedding_rows);
    }
    if (r.push_whole_chain) {
      ++whole_chain_pushes;
      whole_chain_bytes += double(r.push_bytes);
    } else if (r.sync_status == 200 && bytes_per_row > 0) {
      wire_delta_bytes += double(r.push_bytes);
      wire_full_bytes += bytes_per_row * double(r.embedding_rows);
    }
    if (r.push_sent >= started) {
      auto& m = minutes[minute_of(r.push_sent)];
      ++m.syncs;
      m.embedding_rows = r.embedding_rows;
    }
  }
  nlohmann::json timeline = nlohmann::json::array();
  double lift_sum = 0, served_sum = 0, frozen_sum = 0;
  size_t lifted = 0;
  for (auto& [i, m] : minutes) {
    auto served = auc_of(m.served, m.labels);
    auto frozen = auc_of(m.frozen, m.labels);
    if (std::isfinite(served) && std::isfinite(frozen)) {
      lift_sum += served - frozen;
      served_sum += served;
      frozen_sum += frozen;
      ++lifted;
    }
    timeline.push_back({{"minute", i + 1},
                        {"served_auc", number(served)},
                        {"frozen_auc", number(frozen)},
                        {"lift", number(served - frozen)},
                        {"rows_asked", m.served.size()},
                        {"freshness_p50_s", number(percentile(m.freshness, 0.5))},
                        {"freshness_p99_s", number(percentile(m.freshness, 0.99))},
                        {"syncs", m.syncs},
                        {"embedding_rows", m.embedding_rows}});
  }
  // Latency of the answers whose request overlapped a sync being applied, and of the others.
  // The first sync serve applies restores the whole chain, once: its requests count in neither.
  auto latency = split_by_syncs(st.answers, st.pushes);
  auto& during = latency.during_ms;
  auto& without = latency.without_ms;
  auto failed = latency.failed;
  auto all = during;
  all.insert(all.end(), without.begin(), without.end());
  auto client_s = std::chrono::duration<double>(end - started).count();
  auto p99_during = percentile(during, 0.99), p99_without = percentile(without, 0.99);
  nlohmann::json metrics{
    {"freshness_p50_s", number(percentile(st.freshness_s, 0.5))},
    {"freshness_p99_s", number(percentile(st.freshness_s, 0.99))},
    {"freshness_samples", st.freshness_s.size()},
    {"windows_never_served", st.pending.size()},
    {"online_auc_lift", lifted ? nlohmann::json(lift_sum / double(lifted)) : nlohmann::json{}},
    {"served_auc", lifted ? nlohmann::json(served_sum / double(lifted)) : nlohmann::json{}},
    {"frozen_auc", lifted ? nlohmann::json(frozen_sum / double(lifted)) : nlohmann::json{}},
    {"delta_vs_full_bytes",
     full_bytes > 0 ? nlohmann::json(delta_bytes / full_bytes) : nlohmann::json{}},
    {"wire_delta_vs_full_bytes", o.push == ops::online::push_mode::rows && wire_full_bytes > 0
                                   ? nlohmann::json(wire_delta_bytes / wire_full_bytes)
                                   : nlohmann::json{}},
    {"whole_chain_pushes", whole_chain_pushes},
    {"whole_chain_bytes", whole_chain_bytes},
    {"qps", double(st.answers.size() - failed) / client_s},
    {"offered_qps", o.qps},
    {"instances_per_request", o.instances},
    {"p99_ms_during_syncs", number(p99_during)},
    {"p99_ms_without_syncs", number(p99_without)},
    {"p99_sync_ratio", number(p99_during / p99_without)},
    {"p50_ms", number(percentile(all, 0.5))},
    {"requests", st.answers.size()},
    {"requests_during_syncs", during.size()},
    {"requests_during_restore", latency.during_restore},
    {"p50_ms_during_syncs", number(percentile(during, 0.5))},
    {"max_ms_during_syncs", number(percentile(during, 1))},
    {"failed_requests", failed},
    {"syncs", syncs},
    {"full_syncs", full_syncs},
    {"dense_syncs", dense_syncs},
    {"sync_every_s", std::chrono::duration<double>(o.sync_every).count()},
    {"dense_sync_every_s", std::chrono::duration<double>(o.dense_sync_every).count()},
    {"windows", trained.size()},
    {"train_examples_per_s", number(percentile(rates, 0.5))},
    {"online_seconds", client_s},
    {"embedding_rows", trained.empty() ? 0 : trained.back().embedding_rows}};
  std::cout
    << nlohmann::json{{"bench", "online"}, {"metrics", metrics}, {"timeline", timeline}}.dump()
    << std::endl;
  return {};
}

} // namespace darcy::apps
