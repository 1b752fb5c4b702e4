#include "apps/bench/messaging_bench.hpp"

#include <algorithm>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include <caf/actor_system.hpp>

#include "apps/bench/node_pair.hpp"
#include "apps/bench/tcp_echo.hpp"
#include "compute/stats.hpp"
#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/client.hpp"
#include "runtime/cluster/node_agent.hpp"
#include "runtime/cluster/probe.hpp"
#include "runtime/process/process.hpp"
#include "runtime/system_config.hpp"

namespace darcy::apps {

namespace {

using probe_fn = std::function<caf::expected<probe_result>(const probe_spec&)>;

struct summary {
  double rps = 0;
  double mb_s = 0;
  double p50_us = 0;
  double p99_us = 0;
};

// Runs `probe` `reps` times at `window` and once more sequentially for latencies; reports the
// median throughput and the sequential run's percentiles.
caf::expected<summary> measure(const probe_fn& probe, uint32_t count, uint32_t bytes,
                               uint32_t window, uint32_t latency_count, uint32_t reps) {
  std::vector<double> rps;
  for (uint32_t r = 0; r < reps; ++r) {
    auto result = probe({"", 0, count, bytes, window});
    if (!result)
      return std::move(result.error());
    rps.push_back(result->count / result->seconds);
  }
  summary out;
  out.rps = compute::percentile(rps, 0.5);
  out.mb_s = out.rps * bytes / 1e6;
  if (latency_count > 0) {
    auto seq = probe({"", 0, latency_count, bytes, 1});
    if (!seq)
      return std::move(seq.error());
    auto micros = compute::to_micros(seq->latencies_ns);
    out.p50_us = compute::percentile(micros, 0.5);
    out.p99_us = compute::percentile(micros, 0.99);
  }
  return out;
}

void print_row(const char* path, uint32_t bytes, const summary& s) {
  std::cout << std::left << std::setw(8) << path << std::setw(9) << bytes << std::right
            << std::fixed << std::setprecision(0) << std::setw(12) << s.rps << std::setw(12)
            << std::setprecision(1) << s.mb_s << std::setw(10) << s.p50_us << std::setw(10)
            << s.p99_us << "\n";
}

} // namespace

caf::error run_messaging_bench(const messaging_bench_options& opts) {
  runtime::system_config cfg{"bench"};
  caf::actor_system sys{cfg};
  sys.await_actors_before_shutdown(false);
  auto timeout = std::chrono::minutes(5);

  auto local_target = sys.spawn(runtime::node_agent, runtime::node_agent_options{"bench"});
  auto driver = sys.spawn(runtime::probe_driver);
  probe_fn local = [&](const probe_spec& spec) {
    return runtime::ask<probe_result>(sys, driver, timeout, probe_atom::value,
                                      caf::actor_cast<caf::actor>(local_target), spec);
  };

  auto nodes = start_node_pair("bench");
  if (!nodes)
    return with_step("starting bench nodes", nodes.error());
  auto agent_a = runtime::connect_agent(sys, nodes->a.address);
  if (!agent_a)
    return agent_a.error();
  probe_fn remote = [&](const probe_spec& spec) {
    auto remote_spec = spec;
    remote_spec.host = nodes->b.address.host;
    remote_spec.port = nodes->b.address.port;
    return runtime::ask<probe_result>(sys, *agent_a, timeout, probe_atom::value, remote_spec);
  };
  probe_fn tcp = [](const probe_spec& spec) { return run_tcp_echo(spec); };

  std::cout << "messaging: window " << opts.window << ", median of " << opts.repetitions
            << " runs; latencies from a sequential run (window 1)\n"
            << std::left << std::setw(8) << "path" << std::setw(9) << "bytes" << std::right
            << std::setw(12) << "req/s" << std::setw(12) << "MB/s" << std::setw(10) << "p50 us"
            << std::setw(10) << "p99 us"
            << "\n";
  std::map<std::string, summary> results;
  struct run {
    const char* path;
    const probe_fn* probe;
    uint32_t bytes;
    uint32_t count;
  };
  for (auto [path, probe, bytes, count] :
       {run{"local", &local, 1024, opts.count_1k}, run{"remote", &remote, 1024, opts.count_1k},
        run{"tcp", &tcp, 1024, opts.count_1k}, run{"local", &local, 262144, opts.count_256k},
        run{"remote", &remote, 262144, opts.count_256k},
        run{"tcp", &tcp, 262144, opts.count_256k}}) {
    auto latency_count = bytes == 1024 ? opts.latency_count : opts.latency_count / 10;
    auto s = measure(*probe, count, bytes, opts.window, latency_count, opts.repetitions);
    if (!s)
      return with_step(std::string{path} + " probe", s.error());
    print_row(path, bytes, *s);
    results[std::string{path} + (bytes == 1024 ? "_1k" : "_256k")] = *s;
  }
  nodes->stop();

  auto& r = results;
  std::ostringstream json;
  json << std::setprecision(6) << "{\"bench\":\"messaging\",\"metrics\":{"
       << "\"local_rps\":" << r["local_1k"].rps << ",\"local_p99_us_1k\":" << r["local_1k"].p99_us
       << ",\"remote_rps_1k\":" << r["remote_1k"].rps << ",\"tcp_rps_1k\":" << r["tcp_1k"].rps
       << ",\"remote_vs_tcp_1k\":" << r["remote_1k"].rps / r["tcp_1k"].rps
       << ",\"remote_p50_us_1k\":" << r["remote_1k"].p50_us
       << ",\"remote_p99_us_1k\":" << r["remote_1k"].p99_us
       << ",\"tcp_p50_us_1k\":" << r["tcp_1k"].p50_us << ",\"tcp_p99_us_1k\":" << r["tcp_1k"].p99_us
       << ",\"local_mb_s_256k\":" << r["local_256k"].mb_s
       << ",\"remote_mb_s_256k\":" << r["remote_256k"].mb_s
       << ",\"tcp_mb_s_256k\":" << r["tcp_256k"].mb_s
       << ",\"remote_vs_tcp_256k\":" << r["remote_256k"].mb_s / r["tcp_256k"].mb_s
       << ",\"window\":" << opts.window << ",\"cores\":" << std::thread::hardware_concurrency()
       << "}}";
  std::cout << json.str() << std::endl;
  return {};
}

} // namespace darcy::apps
