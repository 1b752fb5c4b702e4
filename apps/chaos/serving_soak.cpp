#include "apps/chaos/serving_soak.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include <signal.h>

#include "messages/error.hpp"
#include "runtime/http/http_client.hpp"
#include "runtime/process/process.hpp"
#include "stores/serving/serving_export.hpp"

namespace darcy::apps {

namespace {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr size_t item_count = 30000;
constexpr uint32_t dim = 16;
constexpr uint32_t shards = 3;
constexpr size_t distinct_queries = 200;
constexpr size_t requests = 6000;
constexpr size_t clients = 2;
constexpr uint32_t k = 10;
constexpr uint32_t deadline_ms = 2000;
/// A request still refused after this long fails the run.
constexpr auto request_patience = 60s;
/// A refused request waits this long before it is asked again.
constexpr auto backoff = 20ms;
constexpr auto start_patience = 120s;
const std::string model = "items";

compute::row_matrix gaussian(size_t rows, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::normal_distribution<float> normal;
  compute::row_matrix m(static_cast<Eigen::Index>(rows), dim);
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j)
      m(i, j) = normal(rng);
  return m;
}

/// The ids of the k items of largest inner product with query q, best first.
std::vector<uint64_t> exact_top_k(const compute::row_matrix& items, const compute::row_matrix& q,
                                  Eigen::Index row) {
  Eigen::VectorXf scores = items * q.row(row).transpose();
  std::vector<uint64_t> ids(static_cast<size_t>(items.rows()));
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = i;
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](uint64_t a, uint64_t b) {
    return scores(static_cast<Eigen::Index>(a)) > scores(static_cast<Eigen::Index>(b));
  });
  ids.resize(k);
  return ids;
}

/// What the clients saw: each request's answer (its "items", as JSON text).
struct load_outcome {
  std::vector<std::string> answers = std::vector<std::string>(requests);
  std::atomic<uint64_t> asked_again{0};
  std::mutex mutex;
  std::string failure;
};

/// Asks request r (query r % distinct_queries) until it is answered in full, or records why not.
void ask(uint16_t port, const std::vector<std::string>& bodies, size_t r, load_outcome& out,
         const std::atomic<bool>& stop) {
  auto answer = ask_until_answered(
    port,
    runtime::http_request_text("POST", "/v1/models/" + model + ":topk", "",
                               bodies[r % bodies.size()]),
    [](const nlohmann::json& body) {
      return !body.value("partial", true) && body.contains("items");
    },
    backoff, request_patience, stop, out.asked_again);
  if (answer) {
    out.answers[r] = (*answer)["items"].dump();
    return;
  }
  std::lock_guard<std::mutex> guard{out.mutex};
  if (out.failure.empty())
    out.failure = "request " + std::to_string(r) + ": " + to_string(answer.error());
}

/// The clients: `clients` threads take the requests in order until all are answered, one
/// fails, or `stop`.
void run_load(uint16_t port, const std::vector<std::string>& bodies, load_outcome& out,
              const std::atomic<bool>& stop) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (size_t c = 0; c < clients; ++c)
    threads.emplace_back([&] {
      for (size_t r; (r = next++) < requests && !stop;) {
        ask(port, bodies, r, out, stop);
        std::lock_guard<std::mutex> guard{out.mutex};
        if (!out.failure.empty())
          return;
      }
    });
  for (auto& t : threads)
    t.join();
}

/// One run: the load on `darcy serve` while `chaos` watches it (none: the clean run, left
/// alone). Fills `out`; answers the run's seconds, or the failure of its start.
caf::expected<double> run_once(const soak_options& o, const std::string& binary,
                               const std::string& exports, const std::vector<std::string>& bodies,
                               bool soaked, double clean_seconds, load_outcome& out,
                               soak_result& result) {
  auto nodes = start_soak_cluster(o, binary);
  if (!nodes)
    return std::move(nodes.error());
  std::optional<serve_run> serve;
  std::atomic<bool> stop{false};
  std::future<void> load;
  auto start_job = [&]() -> caf::expected<soak_job> {
    auto s = start_serve(
      binary, {"--exports", exports, "--listen", "127.0.0.1:0"}, **nodes, model,
      [](const nlohmann::json& status) { return status.value("state", "") == "available"; });
    if (!s)
      return std::move(s.error());
    serve.emplace(std::move(*s));
    load = std::async(std::launch::async, [&] { run_load(serve->port, bodies, out, stop); });
    return soak_job{[&](std::chrono::milliseconds wait) -> caf::expected<int> {
                      serve->process->read_stderr();
                      if (load.wait_for(wait) != std::future_status::ready)
                        return make_error(errc::timeout, "the clients are still asking");
                      return out.failure.empty() && !serve->process->wait(0ms) ? 0 : 1;
                    },
                    [&] { return out.failure + "\n" + serve->process->read_stderr(); },
                    [&] { stop = true; }};
  };
  std::optional<int> code;
  auto begun = clock::now();
  if (soaked) {
    auto c = run_chaos(o, **nodes, clean_seconds, start_job, result);
    if (!c)
      return std::move(c.error());
    code = *c;
  } else {
    auto job = start_job();
    if (!job)
      return std::move(job.error());
    begun = clock::now();
    load.wait();
    code = *job->wait(0ms);
  }
  auto seconds = std::chrono::duration<double>(clock::now() - begun).count();
  if (load.valid())
    load.wait();
  if (serve) {
    if (code && *code != 0 && out.failure.empty())
      out.failure = "darcy serve exited: " + serve->process->read_stderr();
    serve->process->signal(SIGTERM);
    serve->process->wait(30s);
  }
  if (!code && out.failure.empty())
    out.failure = result.failure;
  return seconds;
}

} // namespace

caf::expected<nlohmann::json> ask_until_answered(
  uint16_t port, const std::string& request,
  const std::function<bool(const nlohmann::json&)>& whole, std::chrono::milliseconds wait,
  std::chrono::milliseconds patience, const std::atomic<bool>& stop,
  std::atomic<uint64_t>& asked_again) {
  auto until = clock::now() + patience;
  for (;;) {
    auto raw = runtime::http_exchange(port, request);
    auto code = runtime::http_status(raw);
    auto body = nlohmann::json::parse(runtime::http_body(raw), nullptr, false);
    if (code == 200 && body.is_object() && whole(body))
      return body;
    if ((code != 503 && code != 504 && code != 0) || clock::now() > until || stop)
      return make_error(errc::io_error, "answered HTTP " + std::to_string(code) + ": " +
                                          runtime::http_body(raw).substr(0, 500));
    ++asked_again;
    std::this_thread::sleep_for(wait);
  }
}

caf::expected<serve_run> start_serve(const std::string& binary,
                                     const std::vector<std::string>& args,
                                     const testing::local_cluster& nodes, const std::string& model,
                                     const std::function<bool(const nlohmann::json&)>& ready) {
  std::vector<std::string> argv{binary, "serve", "--cluster", to_string(nodes.seed())};
  argv.insert(argv.end(), args.begin(), args.end());
  auto p = runtime::child_process::start(argv);
  if (!p)
    return std::move(p.error());
  serve_run s;
  s.process.emplace(std::move(*p));
  auto line = s.process->wait_for_line("darcy serve listening on", start_patience);
  if (!line)
    return make_error(errc::io_error,
                      "soak: darcy serve did not start: " + s.process->read_stderr());
  auto host_end = line->find(':', line->find("http://") + 7);
  s.port = static_cast<uint16_t>(std::stoul(line->substr(host_end + 1)));
  auto until = clock::now() + start_patience;
  while (clock::now() < until) {
    auto status = nlohmann::json::parse(
      runtime::http_body(runtime::http_exchange(
        s.port, runtime::http_request_text("GET", "/v1/models/" + model, ""))),
      nullptr, false);
    if (status.is_object() && ready(status))
      return s;
    s.process->read_stderr();
    std::this_thread::sleep_for(20ms);
  }
  return make_error(errc::io_error, "soak: the model was not ready after " +
                                      std::to_string(start_patience.count()) +
                                      " s: " + s.process->read_stderr());
}

caf::expected<soak_result> run_serving_soak(const soak_options& o, const std::string& binary) {
  stores::export_input in;
  in.config.shards = shards;
  in.items = gaussian(item_count, o.seed);
  in.index = {.lists = 64, .seed = o.seed};
  auto exports = o.dir + "/exports";
  if (auto v = stores::write_export(exports + "/" + model, in, 1); !v)
    return std::move(v.error());
  auto queries = gaussian(distinct_queries, o.seed + 1);
  std::vector<std::string> bodies;
  for (Eigen::Index q = 0; q < queries.rows(); ++q) {
    std::vector<float> v(queries.row(q).data(), queries.row(q).data() + dim);
    bodies.push_back(nlohmann::json{{"vector", v}, {"k", k}, {"deadline_ms", deadline_ms}}.dump());
  }

  soak_result result;
  soak_log(o, "clean run of serving on " + std::to_string(o.nodes) + " nodes");
  load_outcome clean;
  auto clean_seconds = run_once(o, binary, exports, bodies, false, 0, clean, result);
  if (!clean_seconds)
    return std::move(clean_seconds.error());
  if (!clean.failure.empty())
    return make_error(errc::io_error, "soak: the clean run failed: " + clean.failure);
  result.clean_seconds = *clean_seconds;

  load_outcome soaked;
  auto seconds = run_once(o, binary, exports, bodies, true, result.clean_seconds, soaked, result);
  if (!seconds)
    return std::move(seconds.error());
  result.completed = soaked.failure.empty() && result.failure.empty();
  if (!result.completed && result.failure.empty())
    result.failure = soaked.failure;
  result.lost_work = soaked.asked_again;

  // Quality: recall@k against exact search; the clean answers must agree among themselves.
  std::vector<std::vector<uint64_t>> exact;
  for (Eigen::Index q = 0; q < queries.rows(); ++q)
    exact.push_back(exact_top_k(in.items, queries, q));
  auto recall = [&](const load_outcome& out) {
    double sum = 0;
    for (size_t r = 0; r < requests; ++r) {
      auto items = nlohmann::json::parse(out.answers[r], nullptr, false);
      if (!items.is_array())
        continue;
      auto& truth = exact[r % distinct_queries];
      for (auto& item : items)
        sum += std::count(truth.begin(), truth.end(), item.value("id", uint64_t{0}));
    }
    return sum / double(requests * k);
  };
  result.clean_quality = recall(clean);
  for (size_t r = distinct_queries; r < requests; ++r)
    if (clean.answers[r] != clean.answers[r % distinct_queries])
      return make_error(errc::io_error, "soak: the clean run answered query " +
                                          std::to_string(r % distinct_queries) +
                                          " in two ways: serving is not deterministic");
  if (result.completed) {
    result.quality = recall(soaked);
    result.quality_delta = (result.quality - result.clean_quality) / result.clean_quality;
    result.bit_equal = true;
    for (size_t r = 0; r < requests; ++r)
      result.bit_equal =
        result.bit_equal && soaked.answers[r] == clean.answers[r % distinct_queries];
  }
  return result;
}

} // namespace darcy::apps
