#include "apps/bench/online_cluster.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "apps/bench/online_cluster_state.hpp"
#include "apps/bench/online_common.hpp"
#include "messages/error.hpp"
#include "ops/ctr/ctr_input.hpp"
#include "ops/ctr/ctr_row_stream.hpp"
#include "ops/estimator/export/export.hpp"
#include "runtime/http/http_client.hpp"
#include "runtime/process/netns.hpp"

namespace darcy::apps {

namespace {

namespace fs = std::filesystem;
namespace est = ops::estimator;
using namespace online;
using namespace std::chrono_literals;

// Namespaces: the chief, the workers, the ps, the serving nodes, then darcy serve.
constexpr size_t first_worker = 1, first_ps = first_worker + workers,
                 first_node = first_ps + parameter_servers, serve_ns = first_node + serving_nodes,
                 namespaces = serve_ns + 1;
constexpr uint16_t serve_port = 8500;
constexpr const char* client_token = "tok-client";
/// Rows of a pool the client asks from: the stream's rows at the training position then.
constexpr uint64_t pool_rows = 1024;

std::string n(uint64_t x) {
  return std::to_string(x);
}

std::string seconds_of(std::chrono::milliseconds ms) {
  return std::to_string(double(ms.count()) / 1000);
}

/// The model's and its stream's flags: the same in the job and in the one-process run.
std::vector<std::string> model_flags(const online_bench_options& o) {
  return {"estimator",
          "ctr",
          "--stream",
          "generate",
          "--seed",
          n(o.seed),
          "--max-ids",
          n(o.max_ids),
          "--drift-rows",
          n(o.drift_rows),
          "--fresh-rate",
          std::to_string(o.fresh_rate),
          "--fresh-step",
          std::to_string(o.fresh_step),
          "--batch",
          n(o.batch),
          "--sync-every",
          seconds_of(o.sync_every),
          "--dense-sync-every",
          seconds_of(o.dense_sync_every),
          "--full-every",
          n(o.full_every),
          "--quiet"};
}

/// Reads the chief's JSON lines into st until st.stop or its stdout ends.
void read_chief(runtime::child_process& chief, cluster_state& st, const std::string& log) {
  std::ofstream out{log};
  while (!st.stop) {
    auto line = chief.wait_for_line("{", 500ms);
    if (!line) {
      if (is(line.error(), errc::timeout))
        continue;
      std::lock_guard<std::mutex> guard{st.mutex};
      st.chief_ended = true;
      return;
    }
    out << *line << std::endl;
    auto j = nlohmann::json::parse(*line, nullptr, false);
    if (!j.is_object())
      continue;
    std::lock_guard<std::mutex> guard{st.mutex};
    if (j.contains("exported")) {
      st.exported = true;
      st.exported_at = j.value("global_step", int64_t{-1});
    }
    if (!j.contains("sync_checkpoint"))
      continue;
    sync_line s;
    s.step = j.value("global_step", int64_t{0});
    s.cut = steady_of(j.value("cut_ms", int64_t{0}));
    s.full = j.value("sync_full", false);
    s.bytes = j.value("sync_bytes", uint64_t{0});
    s.status = j.value("sync_status", 0u);
    s.push_bytes = j.value("push_bytes", uint64_t{0});
    s.whole_chain = j.value("push_whole_chain", false);
    s.rows = j.value("embedding_rows", uint64_t{0});
    if (j.contains("push_sent_ms"))
      s.push.emplace(steady_of(j["push_sent_ms"].get<int64_t>()),
                     steady_of(j["push_answered_ms"].get<int64_t>()));
    st.syncs.push_back(s);
  }
}

/// Asks :predict at o.qps, o.instances rows at a time, from a pool of the stream's rows at the
/// position the chief's last sync trained to (global step × batch), drawn again each time the
/// training moves past it, until st.stop.
void run_client(const online_bench_options& o, const runtime::host_port& serve,
                ops::online::row_stream& stream, cluster_state& st) {
  auto period =
    std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(1 / o.qps));
  auto next = steady::now();
  std::shared_ptr<pool> at;
  uint64_t read_to = 0, at_start = 0;
  uint32_t cursor = 0;
  while (!st.stop) {
    std::this_thread::sleep_until(next);
    next += period;
    int64_t step = 0;
    {
      std::lock_guard<std::mutex> guard{st.mutex};
      step = st.syncs.empty() ? 0 : st.syncs.back().step;
    }
    auto position = uint64_t(step) * o.batch;
    if (!at || position >= at_start + pool_rows) {
      if (position > read_to)
        if (auto skipped = stream.skip(position - read_to); !skipped || !*skipped)
          return;
      read_to = std::max(read_to, position);
      auto w = stream.next_window(pool_rows);
      if (!w || !w->table || w->rows == 0)
        return;
      at = std::make_shared<pool>();
      at->table = w->table;
      at_start = read_to;
      read_to += w->rows;
      cursor = 0;
      std::lock_guard<std::mutex> guard{st.mutex};
      st.pools.push_back(at);
    }
    std::vector<uint32_t> rows;
    for (size_t i = 0; i < o.instances; ++i)
      rows.push_back(cursor++ % pool_rows);
    auto body = nlohmann::json{{"instances", ops::ctr::ctr_instances(*at->table, rows)}}.dump();
    answer_record a;
    a.sent = steady::now();
    auto raw = runtime::http_exchange(
      serve, runtime::http_request_text(
               "POST", std::string{"/v1/models/"} + served_model + ":predict", client_token, body));
    a.answered = steady::now();
    auto j = nlohmann::json::parse(runtime::http_body(raw), nullptr, false);
    a.ok = runtime::http_status(raw) == 200 && j.is_object() && !j.value("partial", false) &&
           j.contains("predictions") && j["predictions"].size() == rows.size();
    std::lock_guard<std::mutex> guard{st.mutex};
    st.answers.push_back(a);
    if (!a.ok)
      continue;
    st.answer_steps.emplace_back(a.answered,
                                 j.contains("sync") ? j["sync"].value("step", int64_t{-1}) : -1);
    for (size_t i = 0; i < rows.size(); ++i)
      at->served.push_back({rows[i], j["predictions"][i][0].get<float>(), a.answered});
  }
}

/// The one-process stream's examples a second: `darcy estimator ctr --stream` with the job's
/// model, stream and syncs, its tables behind the two ps's budgets together, for
/// o.local_seconds after its first window.
caf::expected<double> local_examples_per_s(const online_bench_options& o, const std::string& dir) {
  std::vector<std::string> argv{runtime::sibling_executable("darcy")};
  for (auto& f : model_flags(o))
    argv.push_back(f);
  argv.insert(
    argv.end(),
    {"--threads", n(o.threads), "--window", n(o.window_rows), "--leveldb", dir + "/local/tables",
     "--memory-budget", n(o.memory_budget * parameter_servers), "--sync-dir", dir + "/local/sync"});
  auto log = dir + "/local.log";
  auto p = runtime::child_process::start(logged(log, argv));
  if (!p)
    return std::move(p.error());
  steady::time_point first, last;
  // A window's line counts the rows trained so far.
  uint64_t first_rows = 0, rows = 0, windows = 0;
  auto give_up = steady::now() + std::chrono::duration<double>(o.local_seconds) + 300s;
  while (steady::now() < give_up) {
    auto line = p->wait_for_line("\"window\"", 5s);
    if (!line) {
      if (is(line.error(), errc::timeout))
        continue;
      break;
    }
    auto j = nlohmann::json::parse(*line, nullptr, false);
    if (!j.is_object())
      continue;
    auto now = steady::now();
    if (windows++ == 0) {
      first = now;
      first_rows = j.value("rows", uint64_t{0});
      continue;
    }
    rows = j.value("rows", uint64_t{0}) - first_rows;
    last = now;
    if (std::chrono::duration<double>(now - first).count() >= o.local_seconds)
      break;
  }
  p->signal(SIGKILL);
  (void)p->wait(30s);
  if (windows < 3)
    return make_error(errc::io_error, "online bench --cluster: the one-process stream trained " +
                                        n(windows) + " windows:\n" + tail_of(log));
  return double(rows) / std::chrono::duration<double>(last - first).count();
}

/// The processes of one run, every one SIGKILLed when this goes.
struct processes {
  std::list<std::pair<std::string, runtime::child_process>> all;
  ~processes() { stop(); }
  void stop() {
    for (auto& [name, p] : all)
      p.signal(SIGKILL);
    for (auto& [name, p] : all)
      (void)p.wait(30s);
    all.clear();
  }
  runtime::child_process& add(std::string name, runtime::child_process p) {
    all.emplace_back(std::move(name), std::move(p));
    return all.back().second;
  }
};

/// Starts the training job in its namespaces: the chief, then its ps and workers, which learn
/// its address. The chief's stdout is left to read_chief.
caf::expected<runtime::child_process*> start_job(const online_bench_options& o,
                                                 const runtime::netns_network& net,
                                                 const std::string& dir, processes& ps) {
  auto self = runtime::sibling_executable("darcy");
  auto spec = [&](const std::string& chief) {
    nlohmann::json cluster{{"chief", {chief}}};
    for (size_t i = 0; i < workers; ++i)
      cluster["worker"].push_back(net.address(first_worker + i) + ":0");
    for (size_t i = 0; i < parameter_servers; ++i)
      cluster["ps"].push_back(net.address(first_ps + i) + ":0");
    return cluster;
  };
  auto argv = [&](const nlohmann::json& cluster, const std::string& type, size_t index) {
    nlohmann::json config{{"cluster", cluster}, {"task", {{"type", type}, {"index", index}}}};
    std::vector<std::string> out{"/usr/bin/env", "DARCY_CONFIG=" + config.dump(), self};
    for (auto& f : model_flags(o))
      out.push_back(f);
    out.insert(out.end(), {"--threads",
                           "1",
                           "--max-steps",
                           "1000000000",
                           "--save-checkpoints-steps",
                           "1000000000",
                           "--model-dir",
                           dir + "/model",
                           "--leveldb",
                           dir + "/tables",
                           "--memory-budget",
                           n(o.memory_budget),
                           "--sync-dir",
                           dir + "/sync",
                           "--export",
                           dir + "/serving/" + served_model,
                           "--sync-to",
                           "http://" + net.address(serve_ns) + ":" + n(serve_port) + "/v1/models/" +
                             served_model,
                           "--sync-token-file",
                           dir + "/token"});
    return out;
  };
  auto launch = [&](
                  const std::string& name, size_t ns,
                  const std::vector<std::string>& args) -> caf::expected<runtime::child_process*> {
    auto log = dir + "/" + name + ".log";
    auto p =
      runtime::child_process::start(net.in_namespace(ns, logged(log, args, name != "chief")));
    if (!p)
      return std::move(p.error());
    return &ps.add(name, std::move(*p));
  };
  auto chief = launch("chief", 0, argv(spec(net.address(0) + ":0"), "chief", 0));
  if (!chief)
    return chief;
  auto listening = (*chief)->wait_for_line("listening on", 60s);
  if (!listening)
    return make_error(errc::io_error, "online bench --cluster: the chief did not listen:\n" +
                                        tail_of(dir + "/chief.log"));
  auto cluster = spec(listening->substr(listening->rfind(' ') + 1));
  for (size_t i = 0; i < parameter_servers; ++i)
    if (auto p = launch("ps" + n(i), first_ps + i, argv(cluster, "ps", i)); !p)
      return std::move(p.error());
  for (size_t i = 0; i < workers; ++i)
    if (auto p = launch("worker" + n(i), first_worker + i, argv(cluster, "worker", i)); !p)
      return std::move(p.error());
  return chief;
}

/// Starts the serving cluster's nodes, each in its namespace; returns the first's address.
caf::expected<std::string> start_serving_nodes(const runtime::netns_network& net,
                                               const std::string& dir, processes& ps) {
  std::string seed;
  for (size_t i = 0; i < serving_nodes; ++i) {
    auto name = "s" + n(i);
    std::vector<std::string> argv{
      runtime::sibling_executable("darcy"), "node",      "--name", name, "--listen",
      net.address(first_node + i) + ":0",   "--threads", "1"};
    if (!seed.empty())
      argv.insert(argv.end(), {"--join", seed});
    auto log = dir + "/" + name + ".log";
    auto node = runtime::launch_node(net.in_namespace(first_node + i, logged(log, argv)), 60s);
    if (!node)
      return make_error(errc::io_error, "online bench --cluster: node " + name + ": " +
                                          to_string(node.error()) + "\n" + tail_of(log));
    if (seed.empty())
      seed = runtime::to_string(node->address);
    ps.add(name, std::move(node->process));
  }
  return seed;
}

} // namespace

caf::error run_online_cluster_bench(const online_bench_options& o) {
  if (!runtime::netns_network::available())
    return make_error(errc::unsupported,
                      "online bench --cluster: every role runs in a network namespace of its "
                      "own, which needs root and iproute2's ip");
  std::error_code ec;
  fs::remove_all(o.dir, ec);
  fs::create_directories(o.dir, ec);
  auto dir = fs::absolute(o.dir).string();
  auto local = local_examples_per_s(o, dir);
  if (!local)
    return std::move(local.error());
  if (!o.quiet)
    std::cout << nlohmann::json{{"local_online_examples_per_s", *local}}.dump() << std::endl;
  auto net = runtime::netns_network::create(namespaces);
  if (!net)
    return std::move(net.error());
  cluster_state st;
  std::thread chief_reader, client;
  auto joined = [&] {
    st.stop = true;
    for (auto* t : {&client, &chief_reader})
      if (t->joinable())
        t->join();
  };
  processes ps;
  auto failed = [&](const std::string& what) {
    joined();
    std::string logs;
    for (auto& [name, p] : ps.all)
      logs += "\n--- " + name + " ---\n" + tail_of(dir + "/" + name + ".log");
    return make_error(errc::io_error, "online bench --cluster: " + what + logs);
  };
  std::ofstream{dir + "/token"} << "tok-train\n";
  auto chief = start_job(o, **net, dir, ps);
  if (!chief)
    return failed(to_string(chief.error()));
  chief_reader = std::thread{[&] { read_chief(**chief, st, dir + "/chief.jsonl"); }};
  auto seed = start_serving_nodes(**net, dir, ps);
  if (!seed)
    return failed(to_string(seed.error()));
  // Serving starts on the chief's export, and takes its pushes from then on.
  for (auto until = steady::now() + 300s;; std::this_thread::sleep_for(100ms)) {
    std::unique_lock<std::mutex> guard{st.mutex};
    if (st.exported)
      break;
    if (st.chief_ended || steady::now() > until) {
      guard.unlock();
      return failed("the chief wrote no export");
    }
  }
  // The chief is not on serving's loopback: its pushes carry a token that may manage the model.
  // The client, off loopback too, asks with a token of its own.
  std::ofstream{dir + "/serve.toml"} << "[tokens]\n\"tok-train\" = \"trainer\"\n"
                                     << "\"" << client_token << "\" = \"client\"\n[models."
                                     << served_model << "]\nmanage = [\"trainer\"]\n";
  auto serve_log = dir + "/serve.log";
  runtime::host_port serve_at{(*net)->address(serve_ns), serve_port};
  auto serve = runtime::child_process::start(
    (*net)->in_namespace(serve_ns, logged(serve_log, {runtime::sibling_executable("darcy"),
                                                      "serve",
                                                      "--exports",
                                                      dir + "/serving",
                                                      "--listen",
                                                      runtime::to_string(serve_at),
                                                      "--config",
                                                      dir + "/serve.toml",
                                                      "--sync-dir",
                                                      dir + "/serve-sync",
                                                      "--cluster",
                                                      *seed,
                                                      "--embedding-shards",
                                                      "1",
                                                      "--replicas",
                                                      n(serving_replicas),
                                                      "--http-threads",
                                                      "2",
                                                      "--threads",
                                                      "2"})));
  if (!serve)
    return failed(to_string(serve.error()));
  auto& served = ps.add("serve", std::move(*serve));
  if (auto err = wait_served(serve_at, served_model, served, serve_log, client_token))
    return failed(to_string(err));
  auto stream = ops::ctr::open_ctr_stream(
    "generate", {.generator = {.fresh_rate = o.fresh_rate, .seed = o.seed, .max_ids = o.max_ids},
                 .drift_rows = o.drift_rows,
                 .fresh_step = o.fresh_step});
  if (!stream)
    return failed(to_string(stream.error()));
  auto rows = ops::ctr::ctr_row_stream(std::move(*stream), true, 100ms);
  auto started = steady::now();
  client = std::thread{[&] { run_client(o, serve_at, *rows, st); }};
  // Half way, a node that holds a replica of a shard is SIGKILLed (not the seed).
  auto half = started + std::chrono::duration_cast<steady::duration>(
                          std::chrono::duration<double>(o.seconds / 2));
  auto end = started +
             std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(o.seconds));
  bool killed = false;
  while (steady::now() < end) {
    std::this_thread::sleep_for(200ms);
    bool ended = false;
    {
      std::lock_guard<std::mutex> guard{st.mutex};
      ended = st.chief_ended;
    }
    if (ended)
      return failed("the chief stopped");
    if (!killed && steady::now() >= half) {
      for (auto& [name, p] : ps.all)
        if (name == "s" + n(serving_nodes - 1))
          p.signal(SIGKILL);
      killed = true;
      if (!o.quiet)
        std::cout
          << nlohmann::json{{"killed", "s" + n(serving_nodes - 1)},
                            {"at_s",
                             std::chrono::duration<double>(steady::now() - started).count()}}
               .dump()
          << std::endl;
    }
  }
  joined();
  auto finished = steady::now();
  // The copies in service at the end: the killed node's copy, loaded again, among them.
  auto raw = runtime::http_exchange(
    serve_at,
    runtime::http_request_text("GET", std::string{"/v1/models/"} + served_model, client_token));
  auto model = nlohmann::json::parse(runtime::http_body(raw), nullptr, false);
  if (model.is_object() && model.contains("replicas") && model["replicas"].is_array())
    for (auto& copy : model["replicas"])
      st.replicas_serving_at_end += copy.value("serving", false) ? 1 : 0;
  ps.stop();
  return report_cluster_run(o, dir, st, started, finished, *local);
}

} // namespace darcy::apps
