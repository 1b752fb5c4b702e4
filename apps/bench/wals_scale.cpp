#include "apps/bench/wals_scale.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "apps/bench/node_pair.hpp"
#include "compute/stats.hpp"
#include "messages/error.hpp"
#include "ops/wals_train.hpp"
#include "runtime/cluster/spawn_on.hpp"
#include "runtime/process/machine.hpp"
#include "stores/data/wals_csr.hpp"

namespace darcy::apps {

namespace {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;

/// Bytes sent over the loopback interface since boot (/proc/net/dev), 0 when unknown.
uint64_t loopback_bytes() {
  std::ifstream dev{"/proc/net/dev"};
  std::string line;
  while (std::getline(dev, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    auto name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name != "lo")
      continue;
    std::istringstream fields{line.substr(colon + 1)};
    uint64_t v[9] = {};
    for (auto& x : v)
      fields >> x;
    return v[8]; // the transmitted bytes follow the 8 receive fields
  }
  return 0;
}

struct scale_figures {
  uint64_t rows = 0, cols = 0, nnz = 0;
  double write_s = 0; // 0 when the sides were on disk already
  uint64_t disk_bytes = 0;
  double sweep_s = 0;      // the last sweep, less its checkpoint
  double checkpoint_s = 0; // the last sweep's checkpoint
  double loopback_bytes_per_sweep = 0;
  uint64_t node_peak_rss[2] = {0, 0};
  uint64_t entries_per_core_s = 0;
};

/// The sides of a rows x cols matrix of about nnz entries under o.dir, written when missing.
caf::expected<std::string> sides(const wals_scale_options& o, uint64_t rows, uint64_t cols,
                                 uint64_t nnz, double& write_s) {
  auto dir =
    o.dir + "/csr-" + std::to_string(rows) + "x" + std::to_string(cols) + "-" + std::to_string(nnz);
  write_s = 0;
  if (fs::exists(dir + "/done"))
    return dir;
  fs::remove_all(dir);
  auto start = clock::now();
  compute::synthetic_spec spec{.rows = rows, .cols = cols, .nnz = nnz, .seed = 1};
  spec.threads = o.threads;
  if (auto err = stores::write_synthetic_csr(spec, dir, o.memory_budget / 4))
    return err;
  write_s = compute::seconds_since(start);
  std::ofstream{dir + "/done"} << "complete\n";
  return dir;
}

caf::expected<scale_figures> run_size(const wals_scale_options& o, uint64_t rows, uint64_t cols,
                                      uint64_t nnz) {
  scale_figures f;
  auto dir = sides(o, rows, cols, nnz, f.write_s);
  if (!dir)
    return std::move(dir.error());
  {
    auto opened = stores::open_wals_csr(*dir);
    if (!opened)
      return std::move(opened.error());
    f.rows = opened->rows->rows();
    f.cols = opened->rows->cols();
    f.nnz = opened->rows->nnz();
  }
  f.disk_bytes = fs::file_size(*dir + "/rows.csr") + fs::file_size(*dir + "/cols.csr");
  std::printf("%llu x %llu, %llu entries on disk (%.2f GB, %.0f bytes an entry)%s\n",
              static_cast<unsigned long long>(f.rows), static_cast<unsigned long long>(f.cols),
              static_cast<unsigned long long>(f.nnz), double(f.disk_bytes) / 1e9,
              double(f.disk_bytes) / double(f.nnz),
              f.write_s > 0 ? (", written in " + std::to_string(f.write_s) + " s").c_str() : "");
  std::fflush(stdout);
  auto nodes = start_node_pair("wals-scale");
  if (!nodes)
    return with_step("starting nodes", nodes.error());
  ops::session_options so;
  so.name = "bench";
  so.seed = nodes->a.address;
  so.timeout = std::chrono::minutes(5);
  auto s = ops::session::open(so);
  if (!s)
    return std::move(s.error());
  // The member has joined the seed, but its registry may list it a moment later; the shards and
  // workers go round-robin over the members it lists.
  for (int tries = 0; tries < 300; ++tries) {
    auto status = (*s)->status();
    if (status) {
      auto live = runtime::live_targets(*status, {});
      if (live && live->size() >= 2)
        break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto checkpoints = *dir + "/checkpoints-" + std::to_string(::getpid());
  ops::wals_train_options t;
  t.data.format = "csr";
  t.data.path = *dir;
  t.params.dim = o.dim;
  t.params.cg_steps = o.cg_steps;
  t.sweeps = o.sweeps;
  t.workers = 2;
  t.shards = o.shards;
  t.blocks_per_worker = o.blocks_per_worker;
  t.shards_on_workers = true;
  t.fetch_factors = false;
  t.checkpoint_dir = checkpoints;
  t.token_timeout_ms = 30 * 60 * 1000;
  std::vector<double> ends;
  std::vector<uint64_t> sent;
  auto start = clock::now();
  t.on_progress = [&](const wals_progress& p) {
    if (p.side != wals_side::cols)
      return;
    ends.push_back(compute::seconds_since(start));
    sent.push_back(loopback_bytes());
    std::printf("  sweep %u: %.1f s, loss %.6g\n", p.sweep + 1, ends.back(), p.loss);
    std::fflush(stdout);
  };
  auto r = ops::train_wals(**s, t, nullptr);
  auto total = compute::seconds_since(start);
  f.node_peak_rss[0] = runtime::peak_resident_bytes(nodes->a.process.pid());
  f.node_peak_rss[1] = runtime::peak_resident_bytes(nodes->b.process.pid());
  nodes->stop();
  std::error_code ec;
  fs::remove_all(checkpoints, ec);
  if (!r)
    return std::move(r.error());
  if (ends.size() < 2)
    return make_error(errc::invalid_argument, "wals --scale needs 2 sweeps at least");
  // A sweep's time runs from the sweep before's end: it holds that sweep's checkpoint, which
  // takes as long as the last one (the same rows), timed from the last sweep's end to the end.
  f.checkpoint_s = total - ends.back();
  f.sweep_s = ends.back() - ends[ends.size() - 2] - f.checkpoint_s;
  f.loopback_bytes_per_sweep = double(sent.back() - sent[sent.size() - 2]);
  f.entries_per_core_s =
    static_cast<uint64_t>(double(f.nnz) / (f.sweep_s * std::max<uint32_t>(o.threads, 1)));
  std::printf(
    "  last sweep %.1f s without its checkpoint (%.1f s): %llu entries a core-second; "
    "%.2f GB over loopback a sweep; node peak RSS %.2f and %.2f GiB\n",
    f.sweep_s, f.checkpoint_s, static_cast<unsigned long long>(f.entries_per_core_s),
    f.loopback_bytes_per_sweep / 1e9, double(f.node_peak_rss[0]) / double(1 << 30),
    double(f.node_peak_rss[1]) / double(1 << 30));
  std::fflush(stdout);
  return f;
}

} // namespace

caf::error run_wals_scale(const wals_scale_options& o) {
  std::printf(
    "# wals --scale: dim %u, %u sweeps, %u CG steps, 2 node processes, %u factor "
    "shards, %u cores\n",
    o.dim, o.sweeps, o.cg_steps, o.shards, runtime::machine_cores());
  auto start = clock::now();
  auto ref = run_size(o, o.ref_rows, o.ref_cols, o.ref_nnz);
  if (!ref)
    return with_step("the reference run", ref.error());
  auto big = run_size(o, o.rows, o.cols, o.nnz);
  if (!big)
    return with_step("the scale run", big.error());
  auto wall = compute::seconds_since(start);
  auto own = runtime::peak_resident_bytes();
  auto peak = own + big->node_peak_rss[0] + big->node_peak_rss[1];
  auto gib = [](uint64_t b) { return double(b) / double(1 << 30); };
  double factor_row_bytes = double(o.dim) * sizeof(float);
  std::printf(
    "scale_vs_1m %.3f; peak RSS %.2f GiB (this process %.2f, nodes %.2f + %.2f) of a %.2f GiB "
    "budget; %.1f s in all\n",
    double(big->entries_per_core_s) / double(ref->entries_per_core_s), gib(peak), gib(own),
    gib(big->node_peak_rss[0]), gib(big->node_peak_rss[1]), gib(o.memory_budget), wall);
  std::printf(
    "{\"bench\":\"wals\",\"metrics\":{\"scale_rows\":%llu,\"scale_cols\":%llu,\"scale_nnz\":%llu,"
    "\"dim\":%u,\"sweeps\":%u,\"scale_entries_per_core_s\":%llu,\"ref_entries_per_core_s\":%llu,"
    "\"scale_vs_1m\":%.3f,\"scale_sweep_s\":%.2f,\"scale_checkpoint_s\":%.2f,"
    "\"scale_loopback_bytes_per_sweep\":%.0f,\"scale_disk_bytes_per_entry\":%.2f,"
    "\"scale_write_s\":%.1f,\"factor_row_bytes\":%.0f,\"scale_peak_rss_gib\":%.3f,"
    "\"scale_node_peak_rss_gib\":[%.3f,%.3f],\"memory_budget_gib\":%.2f,\"wall_s\":%.1f}}\n",
    static_cast<unsigned long long>(big->rows), static_cast<unsigned long long>(big->cols),
    static_cast<unsigned long long>(big->nnz), o.dim, o.sweeps,
    static_cast<unsigned long long>(big->entries_per_core_s),
    static_cast<unsigned long long>(ref->entries_per_core_s),
    double(big->entries_per_core_s) / double(ref->entries_per_core_s), big->sweep_s,
    big->checkpoint_s, big->loopback_bytes_per_sweep, double(big->disk_bytes) / double(big->nnz),
    big->write_s, factor_row_bytes, gib(peak), gib(big->node_peak_rss[0]),
    gib(big->node_peak_rss[1]), gib(o.memory_budget), wall);
  if (peak > o.memory_budget)
    return make_error(
      errc::invalid_argument,
      "the processes' peak RSS, " + std::to_string(gib(peak)) + " GiB, passed the budget");
  return {};
}

} // namespace darcy::apps
