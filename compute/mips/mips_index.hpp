// A maximum-inner-product index of either kind a serving export holds: IVF-PQ (ivf_pq_index)
// or a graph (graph_index), searched through one call whose options carry what each kind reads.
//
//   auto index = mips_index::build(items, ids, {.kind = mips_index_kind::graph});
//   auto hits = index->search(queries, 10, {.ef = 64});
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "compute/mips/graph_index.hpp"
#include "compute/mips/ivf_pq_index.hpp"

namespace darcy::compute::mips {

enum class mips_index_kind : uint8_t { ivf_pq = 0, graph = 1 };

/// "ivf_pq" or "graph".
const char* to_string(mips_index_kind kind);
/// The kind named `name` ("ivf_pq", "ivf-pq" or "graph"); errc::invalid_argument otherwise.
plain_expected<mips_index_kind> parse_mips_index_kind(const std::string& name);

struct mips_index_options {
  mips_index_kind kind = mips_index_kind::ivf_pq;
  ivf_pq_options ivf_pq;
  graph_index_options graph;
};

/// What a search reads: probes and rerank for IVF-PQ, ef for a graph.
struct mips_search_options {
  size_t probes = 32;
  size_t rerank = 100;
  size_t ef = 64;
  uint32_t threads = 1;
};

class mips_index {
public:
  explicit mips_index(ivf_pq_index index) : index_(std::move(index)) {}
  explicit mips_index(graph_index index) : index_(std::move(index)) {}

  /// Builds an index of o.kind over `items` (refused as that kind's build refuses them).
  static plain_expected<mips_index> build(const row_matrix& items, std::vector<uint64_t> ids,
                                          const mips_index_options& o);

  mips_index_kind kind() const {
    return index_.index() == 0 ? mips_index_kind::ivf_pq : mips_index_kind::graph;
  }
  size_t size() const;
  size_t dim() const;
  /// The index when of that kind, otherwise null.
  const ivf_pq_index* ivf_pq() const { return std::get_if<ivf_pq_index>(&index_); }
  const graph_index* graph() const { return std::get_if<graph_index>(&index_); }

  /// For each query, k hits, best first by exact inner product (ties by id): IVF-PQ re-ranks
  /// max(rerank, k) candidates from `probes` lists, a graph searches with a beam of ef.
  plain_expected<std::vector<std::vector<hit>>> search(const row_matrix& queries, size_t k,
                                                       const mips_search_options& o) const;

private:
  std::variant<ivf_pq_index, graph_index> index_;
};

} // namespace darcy::compute::mips
