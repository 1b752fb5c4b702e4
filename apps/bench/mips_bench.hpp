// `darcy-bench mips`: maximum-inner-product search (compute/mips) against FAISS (python3-faiss,
// in the same run, on the same vectors and threads): exact search at batch 1 and batch 256
// against flat indexes, then quantized search against FAISS's IVF and HNSW indexes at recall@k
// >= 0.9. Datasets: item factors (a WALS model's V.f32, or synthetic factors whose norms vary)
// and Fashion-MNIST (L2, reduced to MIPS by norm augmentation). Last line: JSON.
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace darcy::apps {

struct mips_bench_options {
  /// Synthetic items, when no factors file is given.
  uint64_t items = 1'000'000;
  uint32_t dim = 64;
  /// A WALS model's item factors (`darcy wals train --out DIR` writes DIR/V.f32); empty:
  /// synthetic factors of `items` rows whose norms vary (log-normal), so that MIPS differs from
  /// cosine search.
  std::string factors;
  uint32_t queries_b1 = 200;
  uint32_t batches_b256 = 4;
  uint32_t k = 10;
  uint32_t threads = 2;
  /// Also sweep quantized search (compute::mips::ivf_pq_index) against FAISS's IVF and HNSW.
  bool ann = true;
  /// FAISS families of the quantized sweep, comma-separated: ivf-flat, ivf-pq, ivf-pq4fs, hnsw,
  /// and for inner product l2-ivf-flat and l2-hnsw (the norm-augmentation reduction); all; or
  /// none (Darcy's sweep alone).
  std::string faiss_families = "all";
  /// Darcy's probe order (compute::mips::ivf_pq_search_options).
  float radius_weight = 0.25f;
  float distance_weight = 0.0f;
  /// Build Darcy's lists from the norm-augmented items (ivf_pq_options::augmented_lists).
  bool augmented_lists = false;
  /// Darcy's sweep: an index per anisotropic threshold and list count (factor x sqrt(items)),
  /// each searched at every probe count up to its lists and every re-rank depth (below k: k);
  /// a probe count below recall 0.9 at its deepest re-rank only there.
  std::vector<float> ann_thresholds{0.0f, 0.2f};
  std::vector<double> ann_list_factors{0.5, 1, 2};
  std::vector<size_t> ann_probes{1, 2, 3, 4, 6, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  std::vector<size_t> ann_rerank{0, 20, 30, 50, 100, 200, 500, 1000, 2000};
  /// Darcy's graphs (compute::mips::graph_index, ef_construction 200, int8 codes), one per M,
  /// each swept over ef as hnswlib's are; empty: none. graph_augmented: linked by the
  /// norm-augmented L2 distance instead of by inner product.
  std::vector<uint32_t> graph_ms{16, 32};
  bool graph_augmented = false;
  /// FAISS's IVF-Flat families: an index per list count (factor x sqrt(items)).
  std::vector<double> faiss_list_factors{0.5, 1, 2, 4};
  /// hnswlib's graphs (python3-hnswlib, ef_construction 200), one per M, each swept over ef;
  /// empty: no hnswlib peer.
  std::vector<uint32_t> hnswlib_ms{16, 32};
  /// A FAISS or hnswlib build that takes longer is stopped, and reported as skipped.
  uint32_t faiss_build_budget_s = 900;
  /// Each point of either sweep repeats the query set for at least this long.
  double point_seconds = 0.5;
  /// Where Debian's dataset-fashion-mnist puts its files; skipped when missing.
  std::string fashion_mnist = "/usr/share/datasets/fashion-mnist";
  std::string python = "/usr/bin/python3";
};

caf::error run_mips_bench(const mips_bench_options& opts);

} // namespace darcy::apps
