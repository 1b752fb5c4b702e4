#include "apps/bench/ctr_bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/bench/ctr_cluster.hpp"
#include "apps/bench/peer_scripts.hpp"
#include "apps/bench/python_peer.hpp"
#include "apps/estimator/ctr.hpp"
#include "compute/nn/parallel_product.hpp"
#include "messages/error.hpp"
#include "ops/ctr/ctr_data.hpp"
#include "runtime/process/machine.hpp"
#include "runtime/process/process.hpp"

namespace darcy::apps {

namespace {

namespace fs = std::filesystem;

/// The files of `rows` rows from `first` on of generator `g`'s stream, generated once per
/// (rows, first, generator).
caf::expected<std::string> ctr_file(const std::string& dir, const char* name,
                                    const compute::ctr_generator_options& g, uint64_t first,
                                    uint64_t rows) {
  auto path = dir + "/" + name + "-" + std::to_string(rows) + "-" + std::to_string(first) + "-s" +
              std::to_string(g.seed) + "-m" + std::to_string(g.max_ids);
  if (g.profile != compute::ctr_profile::kaggle || g.fresh_rate > 0) {
    char fresh[32];
    std::snprintf(fresh, sizeof fresh, "-f%g", g.fresh_rate);
    path += "-" + to_string(g.profile) + fresh;
  }
  path += ".tsv";
  if (fs::exists(path) && fs::exists(path + ".probs") && fs::exists(path + ".done"))
    return path;
  std::error_code ec;
  fs::create_directories(dir, ec);
  ops::ctr::ctr_data_options d{.generator = g};
  d.first_row = first;
  d.rows = rows;
  d.out = path;
  auto written = ops::ctr::write_ctr_data(d);
  if (!written)
    return std::move(written.error());
  std::ofstream{path + ".done"} << "complete\n";
  return path;
}

/// Multiply-adds per example of an MLP of `units` over `in` inputs.
double mlp_macs(uint64_t in, const std::vector<uint32_t>& units) {
  double macs = 0;
  for (auto u : units) {
    macs += double(in) * u;
    in = u;
  }
  return macs;
}

/// The machine's sgemm rate on `threads` threads, GFLOP/s: the median of products of the
/// shapes a DLRM step multiplies most (a batch of 128 through 512 × 256).
double sgemm_gflops(size_t threads) {
  using compute::nn::matrix;
  matrix a = matrix::Random(128, 512), b = matrix::Random(512, 256), c(128, 256);
  std::vector<double> rates;
  for (int r = 0; r < 7; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 50; ++i)
      compute::nn::parallel_product<float>(a, false, b, false, c, false, threads);
    auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(50 * 2.0 * 128 * 512 * 256 / s / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

/// Prints each stretch between two points of a `darcy estimator ctr` timeline (a minute): its
/// examples/s and their ratio to `reference_rate`, the tables' µs an example, the training
/// thread's share of a core, the process's cores, and the machine's share stolen and idle.
/// Returns the lowest ratio of a whole minute after the second (NaN when there is none).
double print_timeline(const nlohmann::json& timeline, double reference_rate) {
  auto cores = double(runtime::machine_cores());
  auto lowest = std::numeric_limits<double>::quiet_NaN();
  const nlohmann::json* last = nullptr;
  for (auto& point : timeline) {
    if (last) {
      auto at = [&](const char* k) {
        return point.at(k).get<double>() - last->at(k).get<double>();
      };
      auto s = at("seconds"), n = at("examples");
      if (s > 0 && n > 0) {
        auto rate = n / s;
        std::printf(
          "    [%4.0f s] %6.0f examples/s (%.3f); lookups %5.1f updates %4.1f us an "
          "example; trainer %.2f of a core, process %.2f cores; machine %.2f stolen, "
          "%.2f idle\n",
          point.at("seconds").get<double>(), rate, rate / reference_rate, at("lookup_s") / n * 1e6,
          at("update_s") / n * 1e6, at("thread_cpu_s") / s, at("process_cpu_s") / s,
          at("machine_steal_s") / s / cores, at("machine_idle_s") / s / cores);
        if (last->at("seconds").get<double>() >= 119 && s >= 59)
          lowest =
            std::isnan(lowest) ? rate / reference_rate : std::min(lowest, rate / reference_rate);
      }
    }
    last = &point;
  }
  return lowest;
}

std::string joined(const std::vector<uint32_t>& units) {
  std::string out;
  for (auto u : units)
    out += (out.empty() ? "" : ",") + std::to_string(u);
  return out;
}

} // namespace

namespace {
caf::error run_quality(const ctr_bench_options& o, nlohmann::json& m);
caf::error run_colossal(const ctr_bench_options& o, nlohmann::json& m);
} // namespace

caf::error run_ctr_bench(const ctr_bench_options& o) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (o.rows == 0 || o.test_rows == 0 || o.threads == 0 || o.epochs == 0)
    return make_error(errc::invalid_argument, "rows, test rows, epochs and threads must be >= 1");
  if (!o.quality && !o.colossal)
    return make_error(errc::invalid_argument, "--no-quality without --colossal runs nothing");
  if (o.peer && o.quality)
    if (auto err = require_torch_peer(o.python))
      return err;
  nlohmann::json m;
  if (o.quality)
    if (auto err = run_quality(o, m))
      return err;
  if (o.colossal)
    if (auto err = run_colossal(o, m))
      return err;
  std::printf("%s\n", nlohmann::json{{"bench", "ctr"}, {"metrics", m}}.dump().c_str());
  return {};
}

namespace {

caf::error run_quality(const ctr_bench_options& o, nlohmann::json& m) {
  compute::ctr_generator_options g{.seed = o.seed, .max_ids = o.max_ids};
  auto train = ctr_file(o.dir, "train", g, 0, o.rows);
  if (!train)
    return with_step("writing the training file", train.error());
  auto test = ctr_file(o.dir, "test", g, o.rows, o.test_rows);
  if (!test)
    return with_step("writing the test file", test.error());
  std::printf(
    "ctr: %llu training rows, %llu test rows (Kaggle profile%s), %zu threads, "
    "%u epoch(s), batch %zu; DLRM dim %u, bottom 13-%s, top %s-1\n",
    static_cast<unsigned long long>(o.rows), static_cast<unsigned long long>(o.test_rows),
    o.max_ids ? (", at most " + std::to_string(o.max_ids) + " ids a field").c_str() : "", o.threads,
    o.epochs, o.batch, o.embedding_dim, joined(o.bottom_units).c_str(),
    joined(o.top_units).c_str());
  double darcy_rate = 0, darcy_auc = 0, bayes = 0;
  auto bytes_per_row = [](const estimator_apps::ctr_result& r) {
    return static_cast<double>(r.memory_tier_bytes) /
           static_cast<double>(std::max<uint64_t>(1, r.embedding_rows));
  };
  for (auto kind :
       {estimator_apps::ctr_model_kind::dlrm, estimator_apps::ctr_model_kind::wide_deep}) {
    estimator_apps::ctr_options c;
    c.train = *train;
    c.eval = *test;
    c.model = kind;
    c.batch = o.batch;
    c.epochs = o.epochs;
    c.embedding_dim = o.embedding_dim;
    c.bottom_units = o.bottom_units;
    c.top_units = o.top_units;
    c.hidden_units = o.top_units;
    c.threads = o.threads;
    c.seed = o.seed;
    c.quiet = true;
    auto r = estimator_apps::run_ctr(c);
    if (!r)
      return with_step("darcy " + to_string(kind), r.error());
    auto name = kind == estimator_apps::ctr_model_kind::dlrm ? "darcy_dlrm" : "darcy_wide_deep";
    std::printf("%s: %.0f examples/s, test AUC %.4f (Bayes %.4f), %llu rows in the tables\n", name,
                r->examples_per_second, r->auc, r->bayes_auc,
                static_cast<unsigned long long>(r->embedding_rows));
    m[std::string{name} + "_examples_per_s"] = r->examples_per_second;
    m[std::string{name} + "_auc"] = r->auc;
    if (kind == estimator_apps::ctr_model_kind::dlrm) {
      darcy_rate = r->examples_per_second;
      darcy_auc = r->auc;
      bayes = r->bayes_auc;
      m["dlrm_bytes_per_row"] = bytes_per_row(*r);
      if (!o.compare_rule.empty()) {
        auto with_rule = c;
        if (!estimator_apps::set_optimizer_named(with_rule.embedding_optimizer, o.compare_rule))
          return make_error(errc::invalid_argument, "--compare-rule " + o.compare_rule);
        auto rr = estimator_apps::run_ctr(with_rule);
        if (!rr)
          return with_step("darcy dlrm with rule " + o.compare_rule, rr.error());
        std::printf(
          "darcy_dlrm with %s on its tables: %.0f examples/s, test AUC %.4f (%+.4f), "
          "%.0f bytes a row (%.0f with %s)\n",
          o.compare_rule.c_str(), rr->examples_per_second, rr->auc, rr->auc - r->auc,
          bytes_per_row(*rr), bytes_per_row(*r), to_string(c.embedding_optimizer.kind).c_str());
        m["rule_auc"] = rr->auc;
        m["rule_auc_vs_adagrad"] = rr->auc - r->auc;
        m["rule_bytes_per_row"] = bytes_per_row(*rr);
      }
      // Where a step's time goes, and how far the MLPs are from the machine's sgemm rate:
      // a training example costs 3 passes (forward, and two products in backward).
      auto examples = double(r->train_examples);
      std::printf("  per example:");
      for (auto& [phase, seconds] : r->phase_seconds)
        std::printf(" %s %.1f us", phase.c_str(), 1e6 * seconds / examples);
      auto fields = uint64_t{26} + 1;
      auto flops =
        3 * 2 *
        (mlp_macs(13, o.bottom_units) + mlp_macs(o.embedding_dim + fields * (fields - 1) / 2, [&] {
           auto top = o.top_units;
           top.push_back(1);
           return top;
         }()));
      auto achieved = flops * r->examples_per_second / 1e9;
      auto peak = sgemm_gflops(o.threads);
      std::printf(
        "\n  MLPs: %.2f MFLOP per training example, %.1f GFLOP/s over the whole run, "
        "%.0f%% of this machine's sgemm rate (%.1f GFLOP/s, 128 x 512 x 256)\n",
        flops / 1e6, achieved, 100 * achieved / peak, peak);
      m["mlp_gflops"] = achieved;
      m["sgemm_gflops"] = peak;
    }
  }
  m["bayes_auc"] = bayes;
  m["auc_gap_to_bayes"] = bayes - darcy_auc;
  if (o.cluster) {
    ctr_cluster_options c{.train = *train,
                          .test = *test,
                          .dir = o.dir + "/cluster-" + std::to_string(::getpid()),
                          .steps = o.cluster_steps,
                          .batch = o.batch,
                          .eval_examples = std::min<uint64_t>(o.test_rows, 100'000),
                          .embedding_dim = o.embedding_dim,
                          .bottom_units = o.bottom_units,
                          .top_units = o.top_units,
                          .seed = o.seed};
    auto r = run_ctr_cluster(c);
    if (!r)
      return with_step("the distributed DLRM", r.error());
    std::printf(
      "darcy_dlrm as a job of processes (chief, %zu ps whose nodes hold the tables' shards, "
      "%zu worker, evaluator): %.0f examples/s over %llu global steps (the first %llu "
      "training rows), test AUC %.4f on the first %llu test rows\n",
      c.ps, c.workers, r->examples_per_s, static_cast<unsigned long long>(r->global_step),
      static_cast<unsigned long long>(r->global_step * o.batch), r->auc,
      static_cast<unsigned long long>(c.eval_examples));
    m["cluster_examples_per_s"] = r->examples_per_s;
    m["cluster_auc"] = r->auc;
    m["cluster_vs_local"] = r->examples_per_s / darcy_rate;
  }
  if (o.peer) {
    auto dir =
      (fs::temp_directory_path() / ("darcy-bench-ctr-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir);
    std::ostringstream args;
    args << *train << " " << *test << " " << o.epochs << " " << o.batch << " " << o.threads << " "
         << o.embedding_dim << " " << joined(o.bottom_units) << " " << joined(o.top_units)
         << " dict,hashed,lr";
    auto lines = run_python(
      o.python, std::string{peers::ctr_common_py} + std::string{peers::ctr_torch_dlrm_py},
      args.str(), dir, true);
    fs::remove_all(dir);
    if (!lines)
      return with_step("the PyTorch peer", lines.error());
    std::map<std::string, nlohmann::json> variants;
    for (auto& l : *lines) {
      auto j = nlohmann::json::parse(l, nullptr, false);
      if (j.is_object() && j.contains("variant"))
        variants[j["variant"].get<std::string>()] = j;
    }
    for (auto* v : {"dict", "hashed", "lr"})
      if (!variants.count(v))
        return make_error(errc::io_error,
                          std::string{"the PyTorch peer printed no "} + v + " result");
    std::printf("BLAS in use: %s\n", blas_in_use().c_str());
    m["torch_dlrm_examples_per_s"] = variants["dict"]["examples_per_s"];
    m["torch_dlrm_auc"] = variants["dict"]["auc"];
    m["torch_hashed_examples_per_s"] = variants["hashed"]["examples_per_s"];
    m["torch_hashed_auc"] = variants["hashed"]["auc"];
    m["lr_auc"] = variants["lr"]["auc"];
    m["ctr_vs_torch"] = darcy_rate / variants["dict"]["examples_per_s"].get<double>();
    m["auc_vs_torch"] = darcy_auc - variants["dict"]["auc"].get<double>();
    std::printf("ctr_vs_torch %.3f, auc_vs_torch %+.4f, auc_gap_to_bayes %.4f\n",
                m["ctr_vs_torch"].get<double>(), m["auc_vs_torch"].get<double>(),
                m["auc_gap_to_bayes"].get<double>());
  }
  return {};
}

/// A `darcy estimator ctr` child process with `args`; its JSON line. Its stderr is drained as
/// it runs and returned in the error when it fails.
caf::expected<nlohmann::json> run_ctr_child(const std::vector<std::string>& args) {
  std::vector<std::string> argv{runtime::sibling_executable("darcy"), "estimator", "ctr"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = runtime::child_process::start(argv);
  if (!child)
    return std::move(child.error());
  std::string err;
  for (;;) {
    auto line = child->wait_for_line("\"examples_per_s\"", std::chrono::seconds(10));
    err += child->read_stderr();
    if (err.size() > 65536)
      err.erase(0, err.size() - 65536);
    if (line) {
      if (auto code = child->wait(std::chrono::minutes(10)); !code || *code != 0)
        return make_error(errc::io_error, "darcy estimator ctr did not exit cleanly: " + err);
      auto j = nlohmann::json::parse(*line, nullptr, false);
      if (!j.is_object())
        return make_error(errc::io_error, "darcy estimator ctr printed a bad line: " + *line);
      return j;
    }
    if (!is(line.error(), errc::timeout))
      return make_error(errc::io_error, "darcy estimator ctr failed: " + err);
  }
}

/// Where a training example's time goes in a run of `darcy estimator ctr`: the tables' lookups
/// and updates (memory tier and disk tier) are inside forward and backward.
void print_phases(const nlohmann::json& run) {
  auto examples = double(std::max<uint64_t>(1, run.at("train_examples").get<uint64_t>()));
  std::printf("  per example:");
  for (auto& [phase, seconds] : run.at("phase_seconds").items())
    std::printf(" %s %.1f us", phase.c_str(), 1e6 * seconds.get<double>() / examples);
  std::printf("\n");
}

caf::error run_colossal(const ctr_bench_options& o, nlohmann::json& m) {
  compute::ctr_generator_options g{
    .profile = compute::ctr_profile::terabyte, .fresh_rate = o.fresh_rate, .seed = o.seed};
  auto train = ctr_file(o.dir, "colossal", g, 0, o.colossal_rows);
  if (!train)
    return with_step("writing the colossal stream", train.error());
  auto test = ctr_file(o.dir, "colossal-test", g, o.colossal_rows, o.colossal_test_rows);
  if (!test)
    return with_step("writing the colossal test file", test.error());
  auto db = o.dir + "/colossal-db-" + std::to_string(::getpid());
  fs::remove_all(db);
  std::vector<std::string> common{"--threads",       std::to_string(o.threads),
                                  "--seed",          std::to_string(o.seed),
                                  "--batch",         std::to_string(o.batch),
                                  "--embedding-dim", std::to_string(o.embedding_dim),
                                  "--bottom",        joined(o.bottom_units),
                                  "--top",           joined(o.top_units),
                                  "--shards",        std::to_string(o.colossal_shards),
                                  "--quiet"};
  std::printf(
    "colossal: %llu Terabyte-profile rows, fresh rate %g, tables of %u shards in LevelDB under "
    "%s behind %.2f GiB of memory tiers\n",
    static_cast<unsigned long long>(o.colossal_rows), o.fresh_rate, o.colossal_shards, db.c_str(),
    double(o.memory_budget) / double(1 << 30));
  auto tiered_args = common;
  tiered_args.insert(tiered_args.end(), {"--train", *train, "--eval", *test, "--leveldb", db,
                                         "--memory-budget", std::to_string(o.memory_budget),
                                         "--prefetch-batches", std::to_string(o.prefetch_batches)});
  auto tiered = run_ctr_child(tiered_args);
  std::error_code ec;
  fs::remove_all(db, ec);
  if (!tiered)
    return with_step("the colossal run", tiered.error());
  auto& t = *tiered;
  auto u64 = [](const nlohmann::json& j, const char* k) { return j.at(k).get<uint64_t>(); };
  auto number = [](const nlohmann::json& j, const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_number() ? it->get<double>()
                                            : std::numeric_limits<double>::quiet_NaN();
  };
  auto keys = u64(t, "embedding_rows") + u64(t, "evictions");
  auto capacity = std::max<uint64_t>(1, u64(t, "cache_capacity"));
  auto hits = u64(t, "tier_hits"), misses = u64(t, "tier_misses");
  std::printf(
    "  %.0f examples/s, test AUC %.4f (Bayes %.4f); %llu keys got a row (no admission: "
    "every key seen), %llu stored, %llu in memory of the %llu the budget holds "
    "(%.0f bytes a row, %.2f GiB counted); memory-tier hit rate %.3f; %.2f GiB on disk; "
    "peak RSS %.2f GiB\n",
    t.at("examples_per_s").get<double>(), number(t, "auc"), number(t, "bayes_auc"),
    static_cast<unsigned long long>(keys),
    static_cast<unsigned long long>(u64(t, "embedding_rows")),
    static_cast<unsigned long long>(u64(t, "cached_rows")),
    static_cast<unsigned long long>(capacity), double(o.memory_budget) / double(capacity),
    double(u64(t, "memory_tier_bytes")) / double(1 << 30),
    double(hits) / double(std::max<uint64_t>(1, hits + misses)),
    double(u64(t, "disk_bytes")) / double(1 << 30),
    double(u64(t, "peak_rss_bytes")) / double(1 << 30));
  print_phases(t);
  auto examples = double(std::max<uint64_t>(1, u64(t, "train_examples")));
  std::printf("  disk reads per example %.2f (of them look-ahead %.2f); look-ahead %u batches\n",
              double(u64(t, "disk_reads")) / examples, double(u64(t, "prefetched_rows")) / examples,
              o.prefetch_batches);
  auto memory_args = common;
  memory_args.insert(memory_args.end(),
                     {"--train", *train, "--train-rows", std::to_string(o.memory_rows)});
  auto memory = run_ctr_child(memory_args);
  if (!memory)
    return with_step("the in-memory run", memory.error());
  std::printf(
    "  in memory, the stream's first %llu rows: %.0f examples/s, %llu rows, peak RSS "
    "%.2f GiB\n",
    static_cast<unsigned long long>(o.memory_rows), memory->at("examples_per_s").get<double>(),
    static_cast<unsigned long long>(u64(*memory, "embedding_rows")),
    double(u64(*memory, "peak_rss_bytes")) / double(1 << 30));
  print_phases(*memory);
  auto memory_rate = memory->at("examples_per_s").get<double>();
  std::printf("  the colossal run by minute:\n");
  auto lowest = print_timeline(t.at("timeline"), memory_rate);
  std::printf("  the in-memory run by minute:\n");
  (void)print_timeline(memory->at("timeline"), memory_rate);
  m["colossal_keys"] = keys;
  m["colossal_stored_vs_budget"] = double(u64(t, "embedding_rows")) / double(capacity);
  m["colossal_peak_rss_gib"] = double(u64(t, "peak_rss_bytes")) / double(1 << 30);
  m["colossal_vs_memory"] =
    t.at("examples_per_s").get<double>() / memory->at("examples_per_s").get<double>();
  m["colossal_examples_per_s"] = t.at("examples_per_s");
  m["colossal_auc"] = number(t, "auc");
  m["colossal_bayes_auc"] = number(t, "bayes_auc");
  m["colossal_hit_rate"] = double(hits) / double(std::max<uint64_t>(1, hits + misses));
  m["colossal_disk_reads_per_example"] = double(u64(t, "disk_reads")) / examples;
  m["colossal_prefetched_per_example"] = double(u64(t, "prefetched_rows")) / examples;
  m["colossal_disk_gib"] = double(u64(t, "disk_bytes")) / double(1 << 30);
  m["colossal_rows_in_memory"] = u64(t, "cached_rows");
  m["memory_examples_per_s"] = memory->at("examples_per_s");
  m["colossal_lowest_minute_vs_memory"] = lowest;
  std::printf(
    "colossal_keys %llu, colossal_stored_vs_budget %.2f, colossal_peak_rss_gib %.2f, "
    "colossal_vs_memory %.3f\n",
    static_cast<unsigned long long>(keys), m["colossal_stored_vs_budget"].get<double>(),
    m["colossal_peak_rss_gib"].get<double>(), m["colossal_vs_memory"].get<double>());
  return {};
}

} // namespace

} // namespace darcy::apps
