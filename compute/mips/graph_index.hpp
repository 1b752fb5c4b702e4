// Maximum-inner-product search over a hierarchical navigable small-world graph (HNSW): layers of
// proximity graphs over the items, a greedy descent through the sparse upper layers, then a
// beam search over the bottom layer, which holds every item. Items are linked by inner product
// (or by the L2 distance of their norm augmentation, or of L2 items) and searched by exact inner
// product; no re-ranking is needed.
//
//   auto index = graph_index::build(items, ids, {.m = 16, .threads = 2});
//   auto hits = index->search(queries, 10, {.ef = 64, .threads = 2});
#pragma once

#include <cstdint>
#include <vector>

#include "compute/top_k.hpp"
#include "messages/errc.hpp"

namespace darcy::compute::mips {

struct graph_index_options {
  /// Links a node keeps on each upper layer; the bottom layer keeps 2 m. At least 2.
  size_t m = 16;
  /// The beam of the search that finds a new node's neighbors; at least m.
  size_t ef_construction = 100;
  /// true: link items by the L2 distance of their norm augmentation [x, sqrt(M^2 - |x|^2)];
  /// false: by inner product, as hnswlib's "ip" space does, which reached a higher recall at
  /// the same beam on clustered items with log-normal norms (graph_index_test).
  bool augmented = false;
  /// The items are [x, -|x|^2 / 2] and the queries [q, 1], the reduction of L2 search to inner
  /// product: link them by the L2 distance of their x (augmented is then ignored).
  bool l2_items = false;
  /// Search through int8 codes of the items (a scale per dimension), a quarter of the bytes a
  /// step reads, re-ranking the beam's nodes exactly at the end; false: exact scores throughout.
  bool int8_codes = true;
  /// Seeds each node's layer count and the order the items are added in.
  uint64_t seed = 1;
  /// Threads that add items at once. With 1 the graph is a function of the items and seed.
  uint32_t threads = 1;
};

/// What a built graph is made of, as an export writes it and a serving shard loads it: the
/// items and ids, the bottom layer (per node a count, then up to 2 m links), the upper layers
/// (node by node, levels[i] blocks of a count then up to m links), the int8 codes and their
/// scales (both empty without int8_codes), the exact last coordinates (L2 items), the entry.
struct graph_parts {
  row_matrix items;
  std::vector<uint64_t> ids;
  uint64_t m = 0;
  std::vector<uint32_t> bottom;
  std::vector<uint32_t> upper;
  std::vector<uint8_t> levels;
  std::vector<int8_t> codes;
  std::vector<float> code_scales;
  std::vector<float> exact_last;
  uint32_t entry = 0;
};

struct graph_search_options {
  /// The bottom layer's beam: candidates kept per query; raised to k when below it. Recall and
  /// cost grow with it.
  size_t ef = 64;
  uint32_t threads = 1;
};

class graph_index {
public:
  /// Links `items` (one per row, all finite; ids[i] names row i in hits, empty ids the row
  /// numbers). Refuses items as check_items does, errc::invalid_argument for no items or m
  /// below 2.
  static plain_expected<graph_index> build(const row_matrix& items, std::vector<uint64_t> ids,
                                           const graph_index_options& o);

  /// A graph from saved parts; errc::corrupt_file when they disagree (sizes, a link or the
  /// entry past the items, a count above its layer's capacity, a non-finite item).
  static plain_expected<graph_index> from_parts(graph_parts parts);
  /// The parts from_parts takes back (copies).
  graph_parts parts() const;

  size_t size() const { return ids_.size(); }
  size_t dim() const { return static_cast<size_t>(items_.cols()); }
  /// Layers above the bottom one.
  size_t upper_layers() const { return top_level_; }

  /// For each query, k hits, best first by exact inner product (ties by id), from a beam of
  /// o.ef (fewer only when the beam reaches fewer nodes). Refuses bad queries as check_queries
  /// does.
  plain_expected<std::vector<std::vector<hit>>> search(const row_matrix& queries, size_t k,
                                                       const graph_search_options& o) const;

private:
  graph_index() = default;

  struct scratch;
  struct builder;

  // Links of `node` on `level`: a count, then that many node numbers.
  const uint32_t* links(uint32_t node, size_t level) const;
  uint32_t* links(uint32_t node, size_t level);
  size_t capacity(size_t level) const { return level == 0 ? 2 * m_ : m_; }

  // The item's inner product with `query` plus query_aug times its augmented coordinate.
  float score(const float* query, float query_aug, uint32_t node) const;
  // Greedy descent from `entry` through the upper layers down to `level` + 1.
  uint32_t descend(const float* query, float query_aug, uint32_t entry, size_t level) const;
  struct exact_scorer;
  struct code_scorer;

  // The best `ef` nodes of `level` reached from `entry` by score_of(node), in scratch.results
  // (unordered); while the graph is built, `building` locks each node whose links it reads.
  template <class Scorer>
  void beam(const Scorer& score_of, uint32_t entry, size_t ef, size_t level, scratch& s,
            builder* building) const;
  std::vector<hit> search_one(const float* query, size_t k, size_t ef, scratch& s) const;

  row_matrix items_;
  std::vector<uint64_t> ids_;
  /// sqrt(M^2 - |x|^2) per item (augmented graphs; zeros otherwise).
  std::vector<float> aug_;
  size_t m_ = 16;
  /// Bottom layer: per node 1 + 2 m words, a count then the links.
  std::vector<uint32_t> bottom_;
  /// Upper layers of node i: levels_[i] blocks of 1 + m words, level 1 first.
  std::vector<std::vector<uint32_t>> upper_;
  std::vector<uint8_t> levels_;
  /// int8 codes, items x code_dims_ (empty without int8_codes): item ≈ code * code_scales_.
  /// L2 items keep their last coordinate, whose range no code holds, exact in exact_last_.
  std::vector<int8_t> codes_;
  std::vector<float> code_scales_;
  size_t code_dims_ = 0;
  std::vector<float> exact_last_;
  uint32_t entry_ = 0;
  size_t top_level_ = 0;
};

} // namespace darcy::compute::mips
