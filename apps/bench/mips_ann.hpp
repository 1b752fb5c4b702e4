// The quantized half of `darcy-bench mips`: compute::mips::ivf_pq_index over a sweep of list
// counts, probes and re-rank depths, against FAISS's IVF-Flat, IVF-PQ with re-ranking (8-bit
// and 4-bit fast scan), HNSW, and for inner product the norm-augmentation reduction to L2
// (IVF-Flat, HNSW), and against hnswlib's graphs (M swept, then ef), over their own sweeps, each
// point with its recall@k against exact search.
#pragma once

#include <string>
#include <vector>

#include "apps/bench/mips_bench.hpp"
#include "apps/bench/mips_peer.hpp"

namespace darcy::apps {

struct ann_point {
  std::string index;
  std::string config;
  double qps = 0;
  double recall = 0;
  /// Seconds the index took to build (Darcy's side).
  double build_s = 0;
};

struct ann_figures {
  std::vector<ann_point> darcy;
  std::vector<ann_point> faiss;
  std::vector<ann_point> hnswlib;
  /// The fastest point of each side at recall >= 0.9 (qps 0: none reached it).
  ann_point best_darcy;
  ann_point best_faiss;
  ann_point best_hnswlib;
};

/// Sweeps both sides on all of `d`'s queries at once, with o.threads threads. `d` is searched by
/// inner product; the FAISS and hnswlib peers get `peer` (the same vectors, or the raw ones of
/// an L2 set).
/// `truth`: the exact top k of every query.
caf::expected<ann_figures> measure_ann(const mips_bench_options& o, const mips_dataset& d,
                                       const mips_dataset& peer,
                                       const std::vector<std::vector<compute::hit>>& truth,
                                       const std::string& dir);

} // namespace darcy::apps
