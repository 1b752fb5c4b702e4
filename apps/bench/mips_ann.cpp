#include "apps/bench/mips_ann.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "compute/mips/ivf_pq_index.hpp"
#include "messages/error.hpp"

namespace darcy::apps {

namespace {

using clock = std::chrono::steady_clock;

// FAISS's side: each family built once, then swept from fast to exact; one JSON line a point.
// For inner product it also runs FAISS's usual MIPS recipe: the reduction to L2 search by norm
// augmentation (x -> [x, sqrt(M^2 - |x|^2)], q -> [q, 0]), under IVF-Flat and HNSW. A build
// that passes `budget` seconds is stopped and reported as skipped.
constexpr const char* faiss_ann_peer = R"PY(
import json, math, sys, time
import numpy as np
import faiss
items_path, n, d, queries_path, nq, metric, k, threads, truth_path, families, budget, factors, min_seconds = sys.argv[1:]
n, d, nq, k, threads, budget = map(int, (n, d, nq, k, threads, budget))
min_seconds = float(min_seconds)  # each point repeats the query set for at least this long
families = set(families.split(","))
faiss.omp_set_num_threads(threads)
xb = np.fromfile(items_path, dtype=np.float32).reshape(n, d)
xq = np.fromfile(queries_path, dtype=np.float32).reshape(nq, d)
truth = np.fromfile(truth_path, dtype=np.int64).reshape(nq, k)
mt = faiss.METRIC_INNER_PRODUCT if metric == "ip" else faiss.METRIC_L2
def wanted(family):
    return "all" in families or family in families
def recall(found):
    return sum(len(set(found[i]) & set(truth[i])) for i in range(nq)) / (nq * k)
def build(factory, data=xb, metric=mt):
    start = time.perf_counter()
    index = faiss.index_factory(data.shape[1], factory, metric)
    # index_factory turns on polysemous training for 8-bit IVF-PQ; it serves only polysemous
    # search, which no sweep here uses, and costs seconds per sub-quantizer (20 minutes for
    # Fashion-MNIST's 196).
    if "IVF" in factory:
        outer = faiss.downcast_index(index)
        ivf = faiss.downcast_index(faiss.extract_index_ivf(getattr(outer, "base_index", outer)))
        if hasattr(ivf, "do_polysemous_training"):
            ivf.do_polysemous_training = False
    index.train(data)
    step = 50000
    for first in range(0, n, step):
        index.add(data[first:first + step])
        spent = time.perf_counter() - start
        if spent > budget and first + step < n:
            print(json.dumps({"skipped": factory, "why": f"build stopped after {spent:.0f} s "
                              f"(budget {budget} s) with {first + step} of {n} items added"}),
                  flush=True)
            return None
    print(json.dumps({"built": factory, "seconds": time.perf_counter() - start}), flush=True)
    return index
def sweep(name, index, settings, queries=xq):
    for label, apply in settings:
        apply()
        start, searched = time.perf_counter(), 0
        while searched == 0 or time.perf_counter() - start < min_seconds:
            _, found = index.search(queries, k)
            searched += nq
        qps = searched / (time.perf_counter() - start)
        r = recall(found)
        print(json.dumps({"index": name, "config": label, "qps": qps, "recall": r}), flush=True)
        if r >= 0.995:
            break
# IVF-Flat builds one index per list count f sqrt(n); the quantized IVF families, 4 sqrt(n).
flat_nlists = sorted({max(1, int(float(f) * math.sqrt(n))) for f in factors.split(",")})
nlist = int(4 * math.sqrt(n))
def ivf_settings(index, k_factor=None):
    # FAISS 1.7.3's extract_index_ivf does not unwrap a re-ranking (RFlat) index: take its base.
    refine = faiss.downcast_index(index) if k_factor else None
    ivf = faiss.extract_index_ivf(refine.base_index if refine is not None else index)
    probes = [p for p in (1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 256, 512, 1024, 2048)
              if p <= ivf.nlist]
    def setter(p):
        def apply():
            ivf.nprobe = p
            if refine is not None:
                refine.k_factor = k_factor
        return apply
    return [(f"nprobe={p}" + (f",k_factor={k_factor}" if k_factor else ""), setter(p))
            for p in probes]
def hnsw_settings(index):
    def setter(e):
        def apply():
            index.hnsw.efSearch = e
        return apply
    return [(f"efSearch={e}", setter(e)) for e in (16, 32, 64, 128, 256, 512, 1024)]
if wanted("ivf-flat"):
    for lists in flat_nlists:
        index = build(f"IVF{lists},Flat")
        if index is not None:
            sweep(f"IVF{lists}-Flat", index, ivf_settings(index))
        del index
if wanted("ivf-pq"):
    m8 = max(m for m in range(1, d // 4 + 1) if d % m == 0)
    index = build(f"IVF{nlist},PQ{m8},RFlat")
    if index is not None:
        for kf in (2, 4, 8, 16):
            sweep(f"IVF-PQ{m8}+re-rank", index, ivf_settings(index, kf))
    del index
if wanted("ivf-pq4fs"):
    try:
        m4 = d // 2 if d % 2 == 0 else d
        index = build(f"IVF{nlist},PQ{m4}x4fs,RFlat")
        if index is not None:
            for kf in (2, 4, 8, 16):
                sweep(f"IVF-PQ{m4}x4fs+re-rank", index, ivf_settings(index, kf))
        del index
    except RuntimeError as e:
        print(json.dumps({"skipped": "PQx4fs", "why": str(e)[:200]}), flush=True)
if wanted("hnsw"):
    index = build("HNSW32")
    if index is not None:
        sweep("HNSW32", index, hnsw_settings(index))
    del index
if metric == "ip" and (wanted("l2-ivf-flat") or wanted("l2-hnsw")):
    norms = (xb * xb).sum(axis=1)
    xb2 = np.hstack([xb, np.sqrt(np.maximum(norms.max() - norms, 0))[:, None]]).astype(np.float32)
    xq2 = np.hstack([xq, np.zeros((nq, 1), dtype=np.float32)])
    if wanted("l2-ivf-flat"):
        for lists in flat_nlists:
            index = build(f"IVF{lists},Flat", xb2, faiss.METRIC_L2)
            if index is not None:
                sweep(f"L2-reduced IVF{lists}-Flat", index, ivf_settings(index), xq2)
            del index
    if wanted("l2-hnsw"):
        index = build("HNSW32", xb2, faiss.METRIC_L2)
        if index is not None:
            sweep("L2-reduced HNSW32", index, hnsw_settings(index), xq2)
        del index
)PY";

// "1,4" for {1, 4}.
std::string join(const std::vector<double>& xs) {
  std::string out;
  for (auto x : xs)
    out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

double seconds_since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

ann_point best_of(const std::vector<ann_point>& points) {
  ann_point best;
  for (auto& p : points)
    if (p.recall >= 0.9 && p.qps > best.qps)
      best = p;
  return best;
}

caf::expected<std::vector<ann_point>> run_faiss_ann(
  const mips_bench_options& o, const mips_dataset& peer,
  const std::vector<std::vector<compute::hit>>& truth, const std::string& dir) {
  auto items = dir + "/items.f32", queries = dir + "/queries.f32", ids = dir + "/truth.i64";
  if (auto err = write_raw(items, peer.items))
    return err;
  if (auto err = write_raw(queries, peer.queries))
    return err;
  {
    std::ofstream out{ids, std::ios::binary};
    for (auto& hits : truth)
      for (auto& h : hits) {
        auto id = static_cast<int64_t>(h.id);
        out.write(reinterpret_cast<const char*>(&id), sizeof id);
      }
  }
  std::ostringstream args;
  args << items << " " << peer.items.rows() << " " << peer.items.cols() << " " << queries << " "
       << peer.queries.rows() << " " << peer.metric << " " << o.k << " " << o.threads << " " << ids
       << " " << o.faiss_families << " " << o.faiss_build_budget_s << " "
       << join(o.faiss_list_factors) << " " << o.point_seconds;
  auto lines = run_python(o.python, faiss_ann_peer, args.str(), dir, true);
  if (!lines)
    return std::move(lines.error());
  std::vector<ann_point> points;
  for (auto& line : *lines) {
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
    auto build_s = seconds_since(start);
    char name[64];
    std::snprintf(name, sizeof name, "darcy-ivf%zu-pq4,T=%.1f", index->lists(), threshold);
    std::printf("  %s: built in %.1f s\n", name, build_s);
    // One point: the query set repeated for at least o.point_seconds, as the peer does.
    auto measure = [&](size_t probes, size_t depth) -> caf::expected<double> {
      auto rerank = std::max<size_t>(depth, o.k);
      auto begin = clock::now();
      compute::mips::ivf_pq_search_options search{
        .probes = probes,
        .distance_weight = o.distance_weight,
        // The bound is for inner products.
        .radius_weight = peer.metric == "l2" ? 0.0f : o.radius_weight,
        .rerank = rerank,
        .threads = o.threads};
      auto hits = index->search(d.queries, o.k, search);
      auto searched = static_cast<double>(d.queries.rows());
      for (; hits && seconds_since(begin) < o.point_seconds;
           searched += static_cast<double>(d.queries.rows()))
        hits = index->search(d.queries, o.k, search);
      if (!hits)
        return make_error(hits.error());
      auto qps = searched / seconds_since(begin);
      auto r = compute::recall_at(truth, *hits);
      f.darcy.push_back({name,
                         "probes=" + std::to_string(probes) + ",rerank=" + std::to_string(rerank),
                         qps, r, build_s});
      std::printf("  {\"index\": \"%s\", \"config\": \"%s\", \"qps\": %.1f, \"recall\": %.4f}\n",
                  name, f.darcy.back().config.c_str(), qps, r);
      return r;
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
  auto faiss = run_faiss_ann(o, peer, truth, dir);
  if (!faiss)
    return std::move(faiss.error());
  f.faiss = std::move(*faiss);
  f.best_darcy = best_of(f.darcy);
  f.best_faiss = best_of(f.faiss);
  return f;
}

} // namespace darcy::apps
