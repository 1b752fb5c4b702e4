#include "apps/bench/redis_bench.hpp"

#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "apps/bench/key_stream.hpp"
#include "messages/error.hpp"
#include "ops/testing/redis_server.hpp"
#include "runtime/process/process.hpp"
#include "stores/embedding/redis_store.hpp"
#include "stores/embedding/row_codec.hpp"

namespace darcy::apps {

namespace {

// redis-benchmark as its users run it: 16 commands per round trip, 256-byte values, its
// default 50 connections. Answers the GETs per second of its CSV report.
caf::expected<double> redis_benchmark_gets(uint16_t port, const redis_bench_options& o) {
  auto child = runtime::child_process::start({"/usr/bin/redis-benchmark", "-h", "127.0.0.1", "-p",
                                              std::to_string(port), "-P", "16", "-d", "256", "-t",
                                              "set,get", "-n", std::to_string(o.peer_requests),
                                              "-r", std::to_string(o.rows), "--csv"});
  if (!child)
    return std::move(child.error());
  auto line = child->wait_for_line("\"GET\"", std::chrono::minutes(5));
  if (!line)
    return make_error(errc::io_error,
                      "redis-benchmark: " + render(line.error()) + " " + child->read_stderr());
  child->wait(std::chrono::seconds(30));
  // "GET","123456.78",...
  auto first = line->find(",\"");
  if (first == std::string::npos)
    return make_error(errc::io_error, "redis-benchmark printed " + *line);
  return std::stod(line->substr(first + 2));
}

} // namespace

caf::error run_redis_bench(const redis_bench_options& o) {
  auto server = testing::redis_server::start({});
  if (!server)
    return server.error();
  auto url = (*server)->url("bench");
  de_config cfg;
  cfg.name = "rows";
  cfg.dim = o.dim;
  cfg.backend = backend_kind::redis;
  cfg.path = url;
  cfg.staleness_ms = 1000000;
  {
    auto writer = stores::redis_store::open(cfg);
    if (!writer)
      return writer.error();
    std::vector<float> out(size_t{1024} * o.dim);
    for (uint64_t first = 0; first < o.rows; first += 1024) {
      key_strings keys;
      for (auto id = first; id < std::min(o.rows, first + 1024); ++id)
        keys.push_back(key_of(id));
      std::vector<std::string_view> views(keys.begin(), keys.end());
      if (auto err = (*writer)->lookup(views, {out.data(), keys.size() * o.dim}))
        return err;
    }
    if (auto err = (*writer)->flush())
      return err;
  }
  auto record_bytes = sizeof(uint64_t) + stores::row_record_bytes(o.dim, 0);
  std::cout << "rows " << o.rows << " of dim " << o.dim << " (" << record_bytes
            << "-byte records) in redis at " << url << std::endl;

  std::vector<float> out(size_t{o.batch} * o.dim);
  caf::error lookup_error;
  auto lookup_with = [&](stores::redis_store& store) {
    return [&](const key_strings& keys) {
      std::vector<std::string_view> views(keys.begin(), keys.end());
      if (auto err = store.lookup(views, {out.data(), keys.size() * o.dim}))
        lookup_error = err;
    };
  };

  // Every lookup from Redis: staleness 0 leaves nothing to the cache.
  auto uniform = key_batches(zipf_stream(o.rows, o.batches, o.batch, 0.0));
  auto direct = stores::redis_store::open_reader(url, cfg.name, 0, 0);
  if (!direct)
    return direct.error();
  auto darcy_rows_s = rows_per_second(uniform, o.repetitions, lookup_with(**direct));
  if (lookup_error)
    return lookup_error;

  auto peer = redis_benchmark_gets((*server)->port(), o);
  if (!peer)
    return peer.error();

  // The cached reader on a Zipf stream: one pass to warm the cache, then the measured ones.
  auto zipf = key_batches(zipf_stream(o.rows, o.batches, o.batch, o.zipf, 7));
  auto cache_bytes = static_cast<uint64_t>(o.cache_fraction * static_cast<double>(o.rows) *
                                           static_cast<double>(record_bytes + 96));
  auto cached = stores::redis_store::open_reader(url, cfg.name, cache_bytes, o.staleness_ms);
  if (!cached)
    return cached.error();
  rows_per_second(zipf, 1, lookup_with(**cached));
  auto hits = (*cached)->cache_hits(), misses = (*cached)->cache_misses();
  auto cached_rows_s = rows_per_second(zipf, o.repetitions, lookup_with(**cached));
  if (lookup_error)
    return lookup_error;
  hits = (*cached)->cache_hits() - hits;
  misses = (*cached)->cache_misses() - misses;
  auto hit_rate = static_cast<double>(hits) / static_cast<double>(hits + misses);

  std::cout << std::fixed << std::setprecision(0) << "darcy lookups from redis     " << darcy_rows_s
            << " rows/s (batches of " << o.batch << ")\n"
            << "redis-benchmark -P 16 -d 256 " << *peer << " GET/s\n"
            << "darcy cached, zipf " << std::setprecision(2) << o.zipf << "      "
            << std::setprecision(0) << cached_rows_s << " rows/s, hit rate " << std::setprecision(3)
            << hit_rate << " (cache " << (*cached)->cache_capacity() << " rows)" << std::endl;
  std::ostringstream json;
  json << std::setprecision(6) << "{\"bench\":\"redis\",\"metrics\":{"
       << "\"redis_vs_redis_benchmark\":" << darcy_rows_s / *peer
       << ",\"cache_hit_rate\":" << hit_rate << ",\"darcy_rows_s\":" << darcy_rows_s
       << ",\"redis_benchmark_get_s\":" << *peer << ",\"cached_rows_s\":" << cached_rows_s
       << ",\"rows\":" << o.rows << ",\"dim\":" << o.dim << ",\"batch\":" << o.batch
       << ",\"zipf\":" << o.zipf << ",\"cache_rows\":" << (*cached)->cache_capacity()
       << ",\"cores\":" << std::thread::hardware_concurrency() << "}}";
  std::cout << json.str() << std::endl;
  return {};
}

} // namespace darcy::apps
