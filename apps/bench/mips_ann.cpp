#include "apps/bench/mips_ann.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "apps/bench/peer_scripts.hpp"
#include "compute/mips/graph_index.hpp"
#include "compute/mips/ivf_pq_index.hpp"
#include "compute/stats.hpp"
#include "messages/error.hpp"

namespace darcy::apps {

namespace {

using clock = std::chrono::steady_clock;

// "1,4" for {1, 4}.
std::string join(const std::vector<double>& xs) {
  std::string out;
  for (auto x : xs)
    out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

ann_point best_of(const std::vector<ann_point>& points) {
  ann_point best;
  for (auto& p : points)
    if (p.recall >= 0.9 && p.qps > best.qps)
      best = p;
  return best;
}

/// The points a peer script printed, one JSON line each ({"index", "config", "qps", "recall"});
/// its other lines (builds, skips) are left out.
std::vector<ann_point> parse_points(const std::vector<std::string>& lines) {
  std::vector<ann_point> points;
  for (auto& line : lines) {
    char index[128] = {}, config[128] = {};
    ann_point p;
    if (std::sscanf(line.c_str(),
                    "{\"index\": \"%127[^\"]\", \"config\": \"%127[^\"]\", \"qps\": %lf, "
                    "\"recall\": %lf}",
                    index, config, &p.qps, &p.recall) == 4) {
      p.index = index;
      p.config = config;
      points.push_back(p);
    }
  }
  return points;
}

/// The files both peers read under `dir`: items.f32, queries.f32, truth.i64.
caf::error write_peer_files(const mips_dataset& peer,
                            const std::vector<std::vector<compute::hit>>& truth,
                            const std::string& dir) {
  if (auto err = write_raw(dir + "/items.f32", peer.items))
    return err;
  if (auto err = write_raw(dir + "/queries.f32", peer.queries))
    return err;
  std::ofstream out{dir + "/truth.i64", std::ios::binary};
  for (auto& hits : truth)
    for (auto& h : hits) {
      auto id = static_cast<int64_t>(h.id);
      out.write(reinterpret_cast<const char*>(&id), sizeof id);
    }
  return out ? caf::error{} : make_error(errc::io_error, "cannot write " + dir + "/truth.i64");
}

/// The arguments both peers start with: the files, their shapes, the metric, k and threads.
std::string peer_arguments(const mips_bench_options& o, const mips_dataset& peer,
                           const std::string& dir) {
  std::ostringstream args;
  args << dir << "/items.f32 " << peer.items.rows() << " " << peer.items.cols() << " " << dir
       << "/queries.f32 " << peer.queries.rows() << " " << peer.metric << " " << o.k << " "
       << o.threads << " " << dir << "/truth.i64";
  return args.str();
}

caf::expected<std::vector<ann_point>> run_faiss_ann(const mips_bench_options& o,
                                                    const mips_dataset& peer,
                                                    const std::string& dir) {
  std::ostringstream args;
  args << peer_arguments(o, peer, dir) << " " << o.faiss_families << " " << o.faiss_build_budget_s
       << " " << join(o.faiss_list_factors) << " " << o.point_seconds;
  auto lines = run_python(o.python, peers::mips_faiss_ann_py, args.str(), dir, true);
  if (!lines)
    return std::move(lines.error());
  return parse_points(*lines);
}

caf::expected<std::vector<ann_point>> run_hnswlib_ann(const mips_bench_options& o,
                                                      const mips_dataset& peer,
                                                      const std::string& dir) {
  std::string ms;
  for (auto m : o.hnswlib_ms)
    ms += (ms.empty() ? "" : ",") + std::to_string(m);
  std::ostringstream args;
  args << peer_arguments(o, peer, dir) << " " << ms << " " << o.faiss_build_budget_s << " "
       << o.point_seconds;
  auto lines = run_python(o.python, peers::mips_hnswlib_ann_py, args.str(), dir, true);
  if (!lines)
    return std::move(lines.error());
  return parse_points(*lines);
}

/// One point of a sweep: search() over the query set, repeated for at least o.point_seconds as
/// the peers do, added to `points` as `point` with its QPS and recall and printed as the peers
/// print theirs. Answers the recall.
template <class Search>
caf::expected<double> measure_point(const mips_bench_options& o, const mips_dataset& d,
                                    const std::vector<std::vector<compute::hit>>& truth,
                                    Search&& search, ann_point point,
                                    std::vector<ann_point>& points) {
  auto begin = clock::now();
  auto hits = search();
  auto searched = static_cast<double>(d.queries.rows());
  for (; hits && compute::seconds_since(begin) < o.point_seconds;
       searched += static_cast<double>(d.queries.rows()))
    hits = search();
  if (!hits)
    return make_error(hits.error());
  point.qps = searched / compute::seconds_since(begin);
  point.recall = compute::recall_at(truth, *hits);
  points.push_back(point);
  std::printf("  {\"index\": \"%s\", \"config\": \"%s\", \"qps\": %.1f, \"recall\": %.4f}\n",
              point.index.c_str(), point.config.c_str(), point.qps, point.recall);
  return point.recall;
}

/// The beams of a graph's sweep: the ef values hnswlib's peer sweeps.
constexpr size_t graph_efs[] = {10, 12, 16, 20,  24,  32,  40,  48,  56,
                                64, 80, 96, 128, 160, 256, 384, 512, 1024};

/// Darcy's graph indexes, one per M in o.graph_ms, each searched at every beam until recall
/// passes 0.995.
caf::error sweep_graphs(const mips_bench_options& o, const mips_dataset& d, bool l2_items,
                        const std::vector<std::vector<compute::hit>>& truth,
                        std::vector<ann_point>& points) {
  for (auto m : o.graph_ms) {
    auto start = clock::now();
    auto index = compute::mips::graph_index::build(d.items, {},
                                                   {.m = m,
                                                    .ef_construction = 200,
                                                    .augmented = o.graph_augmented,
                                                    .l2_items = l2_items,
                                                    .threads = o.threads});
    if (!index)
      return make_error(index.error());
    auto build_s = compute::seconds_since(start);
    auto name =
      std::string{"darcy-graph-M"} + std::to_string(m) + (o.graph_augmented ? "-aug" : "");
    std::printf("  %s: built in %.1f s\n", name.c_str(), build_s);
    for (auto ef : graph_efs) {
      if (ef < o.k)
        continue;
      compute::mips::graph_search_options search{.ef = ef, .threads = o.threads};
      auto r = measure_point(
        o, d, truth, [&] { return index->search(d.queries, o.k, search); },
        {name, "ef=" + std::to_string(ef), 0, 0, build_s}, points);
      if (!r)
        return std::move(r.error());
      if (*r >= 0.995)
        break;
    }
  }
  return {};
}

} // namespace

caf::expected<ann_figures> measure_ann(const mips_bench_options& o, const mips_dataset& d,
                                       const mips_dataset& peer,
                                       const std::vector<std::vector<compute::hit>>& truth,
                                       const std::string& dir) {
  ann_figures f;
  // An index per list count, and on each the anisotropic loss (ScaNN's T = 0.2) against plain
  // squared error.
  std::vector<std::pair<float, double>> builds;
  for (float threshold : o.ann_thresholds)
    for (double factor : o.ann_list_factors)
      builds.emplace_back(threshold, factor);
  for (auto [threshold, factor] : builds) {
    auto lists = std::max<size_t>(
      1, static_cast<size_t>(factor * std::sqrt(static_cast<double>(d.items.rows()))));
    auto start = clock::now();
    auto index = compute::mips::ivf_pq_index::build(
      d.items, {},
      {.lists = lists,
       .anisotropic_threshold = threshold,
       .threads = o.threads,
       .augmented_lists = o.augmented_lists,
       // The L2 set is searched through [x, -|x|^2 / 2]: score that exactly.
       .exact_last_dim = peer.metric == "l2"});
    if (!index)
      return make_error(index.error());
    auto build_s = compute::seconds_since(start);
    char name[64];
    std::snprintf(name, sizeof name, "darcy-ivf%zu-pq4,T=%.1f", index->lists(), threshold);
    std::printf("  %s: built in %.1f s\n", name, build_s);
    auto measure = [&](size_t probes, size_t depth) -> caf::expected<double> {
      auto rerank = std::max<size_t>(depth, o.k);
      compute::mips::ivf_pq_search_options search{
        .probes = probes,
        .distance_weight = o.distance_weight,
        // The bound is for inner products.
        .radius_weight = peer.metric == "l2" ? 0.0f : o.radius_weight,
        .rerank = rerank,
        .threads = o.threads};
      return measure_point(
        o, d, truth, [&] { return index->search(d.queries, o.k, search); },
        {name, "probes=" + std::to_string(probes) + ",rerank=" + std::to_string(rerank), 0, 0,
         build_s},
        f.darcy);
    };
    auto deepest = *std::max_element(o.ann_rerank.begin(), o.ann_rerank.end());
    for (size_t probes : o.ann_probes) {
      if (probes > index->lists())
        continue;
      // Recall only grows with the re-rank depth: a probe count whose deepest re-rank stays
      // below 0.9 is not measured at the shallower ones.
      auto top = measure(probes, deepest);
      if (!top)
        return std::move(top.error());
      if (*top >= 0.9)
        for (size_t depth : o.ann_rerank)
          if (depth != deepest)
            if (auto r = measure(probes, depth); !r)
              return std::move(r.error());
      if (*top >= 0.995)
        break;
    }
  }
  if (auto err = sweep_graphs(o, d, peer.metric == "l2", truth, f.darcy))
    return err;
  if (auto err = write_peer_files(peer, truth, dir))
    return err;
  auto faiss = run_faiss_ann(o, peer, dir);
  if (!faiss)
    return std::move(faiss.error());
  f.faiss = std::move(*faiss);
  if (!o.hnswlib_ms.empty()) {
    auto hnsw = run_hnswlib_ann(o, peer, dir);
    if (!hnsw)
      return std::move(hnsw.error());
    f.hnswlib = std::move(*hnsw);
  }
  f.best_darcy = best_of(f.darcy);
  f.best_faiss = best_of(f.faiss);
  f.best_hnswlib = best_of(f.hnswlib);
  return f;
}

} // namespace darcy::apps
