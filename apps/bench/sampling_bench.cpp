#include "apps/bench/sampling_bench.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

#include "compute/stats.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/session.hpp"

namespace darcy::apps {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

std::string row_key(uint64_t i) {
  return "row-" + std::to_string(i);
}

struct table_figures {
  double populate_s = 0;
  /// The first sampling call, which builds the shards' sampling indexes.
  double first_call_ms = 0;
  double median_ms = 0;
  double p90_ms = 0;
};

/// A table of `rows` rows (every row looked up once, then a Zipf-like tail of repeats so that
/// frequencies differ), and the median time of a sampled_logits call on it.
caf::expected<table_figures> measure(const sampling_bench_options& o, const std::string& tier,
                                     uint64_t rows) {
  ops::session_options so;
  so.shards = o.shards;
  so.timeout = std::chrono::minutes(10);
  auto s = ops::session::open(so);
  if (!s)
    return std::move(s.error());
  de_config cfg;
  cfg.name = "labels";
  cfg.dim = o.dim;
  cfg.optimizer = {optimizer_kind::sgd, 0.05f};
  auto path = std::filesystem::path{o.dir} / (tier + "-" + std::to_string(rows));
  if (tier == "leveldb") {
    std::filesystem::remove_all(path);
    cfg.backend = backend_kind::leveldb;
    cfg.path = path.string();
    // Values plus the cache's bookkeeping: about 2 * dim * 4 bytes a row.
    cfg.cache_bytes = std::max<uint64_t>(
      uint64_t{1} << 20,
      static_cast<uint64_t>(o.cache_fraction * static_cast<double>(rows)) * o.dim * 8);
  }
  table_figures f;
  auto start = clock_type::now();
  const uint64_t chunk = 4096;
  std::mt19937_64 rng{7};
  for (uint64_t first = 0; first < rows; first += chunk) {
    std::vector<std::string> keys;
    for (uint64_t i = first; i < std::min(rows, first + chunk); ++i)
      keys.push_back(row_key(i));
    // Repeats: row i is looked up again with probability about 1 / (1 + i / 64).
    for (uint64_t i = first; i < std::min(rows, first + chunk); ++i)
      if (rng() % (1 + i / 64) == 0)
        keys.push_back(row_key(i));
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    auto r = ops::dynamic_embedding_lookup(**s, std::move(keys), cfg, cfg.name, false);
    if (!r)
      return std::move(r.error());
  }
  f.populate_s = seconds_since(start);
  ops::matrix acts = ops::matrix::Random(o.batch, o.dim) * 0.1f;
  auto call = [&](uint64_t seed) -> caf::expected<double> {
    std::vector<std::vector<std::string>> positives;
    for (uint32_t b = 0; b < o.batch; ++b)
      positives.push_back({row_key(rng() % rows)});
    auto t0 = clock_type::now();
    auto r = ops::sampled_logits(**s, positives, acts, o.num_sampled, cfg, cfg.name, seed);
    if (!r)
      return std::move(r.error());
    return seconds_since(t0) * 1e3;
  };
  auto first = call(1);
  if (!first)
    return std::move(first.error());
  f.first_call_ms = *first;
  std::vector<double> times;
  for (uint32_t c = 0; c < o.calls; ++c) {
    auto t = call(c + 2);
    if (!t)
      return std::move(t.error());
    times.push_back(*t);
  }
  f.median_ms = compute::median(times);
  f.p90_ms = compute::percentile(times, 0.9);
  s->reset();
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  return f;
}

} // namespace

caf::error run_sampling_bench(const sampling_bench_options& o) {
  if (o.tiers != "none" &&
      (o.rows.size() < 2 || o.batch == 0 || o.num_sampled == 0 || o.calls == 0))
    return make_error(errc::invalid_argument,
                      "sampling bench: at least two table sizes, and batch, num_sampled and "
                      "calls above 0");
  for (auto rows : o.rows)
    if (rows < o.num_sampled + o.batch)
      return make_error(errc::invalid_argument, "sampling bench: a table of " +
                                                  std::to_string(rows) + " rows is below " +
                                                  "num_sampled + batch");
  std::ostringstream json;
  json << "{\"bench\":\"sampling\",\"metrics\":{\"batch\":" << o.batch
       << ",\"num_sampled\":" << o.num_sampled << ",\"dim\":" << o.dim;
  std::printf("%-8s %12s %11s %14s %10s %10s\n", "tier", "rows", "populate_s", "first_call_ms",
              "median_ms", "p90_ms");
  for (auto tier : {std::string{"memory"}, std::string{"leveldb"}}) {
    if (o.tiers.find(tier) == std::string::npos)
      continue;
    std::vector<double> medians;
    for (auto rows : o.rows) {
      auto f = measure(o, tier, rows);
      if (!f)
        return make_error(errc::io_error, tier + " table of " + std::to_string(rows) +
                                            " rows: " + render(f.error()));
      std::printf("%-8s %12llu %11.1f %14.2f %10.3f %10.3f\n", tier.c_str(),
                  static_cast<unsigned long long>(rows), f->populate_s, f->first_call_ms,
                  f->median_ms, f->p90_ms);
      std::fflush(stdout);
      medians.push_back(f->median_ms);
      json << ",\"sample_ms_" << tier << "_" << rows << "\":" << f->median_ms << ",\"first_call_ms_"
           << tier << "_" << rows << "\":" << f->first_call_ms;
    }
    // The name for the in-memory ratio; the tier's carries its name.
    json << ",\"sample_cost_10m_vs_10k" << (tier == "memory" ? "" : "_" + tier)
         << "\":" << medians.back() / medians.front();
  }
  if (o.live_ann.rows > 0) {
    auto live = o.live_ann;
    live.dim = o.dim;
    live.shards = o.shards;
    live.dir = (std::filesystem::path{o.dir} / "live-ann").string();
    if (auto err = run_live_ann_bench(live, json))
      return make_error(errc::io_error, "live ann: " + render(err));
  }
  json << "}}";
  std::printf("%s\n", json.str().c_str());
  return {};
}

} // namespace darcy::apps
