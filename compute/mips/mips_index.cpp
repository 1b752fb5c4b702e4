#include "compute/mips/mips_index.hpp"

#include <algorithm>

namespace darcy::compute::mips {

const char* to_string(mips_index_kind kind) {
  return kind == mips_index_kind::graph ? "graph" : "ivf_pq";
}

plain_expected<mips_index_kind> parse_mips_index_kind(const std::string& name) {
  if (name == "ivf_pq" || name == "ivf-pq")
    return mips_index_kind::ivf_pq;
  if (name == "graph")
    return mips_index_kind::graph;
  return plain_error{errc::invalid_argument, "unknown index kind '" + name + "' (ivf_pq or graph)"};
}

plain_expected<mips_index> mips_index::build(const row_matrix& items, std::vector<uint64_t> ids,
                                             const mips_index_options& o) {
  if (o.kind == mips_index_kind::graph) {
    auto g = graph_index::build(items, std::move(ids), o.graph);
    if (!g)
      return g.error();
    return mips_index{std::move(*g)};
  }
  auto ivf = ivf_pq_index::build(items, std::move(ids), o.ivf_pq);
  if (!ivf)
    return ivf.error();
  return mips_index{std::move(*ivf)};
}

size_t mips_index::size() const {
  return std::visit([](const auto& index) { return index.size(); }, index_);
}

size_t mips_index::dim() const {
  return std::visit([](const auto& index) { return index.dim(); }, index_);
}

plain_expected<std::vector<std::vector<hit>>> mips_index::search(
  const row_matrix& queries, size_t k, const mips_search_options& o) const {
  if (auto* g = graph())
    return g->search(queries, k, {.ef = o.ef, .threads = o.threads});
  ivf_pq_search_options options;
  options.probes = o.probes;
  options.rerank = std::max(o.rerank, k);
  options.threads = o.threads;
  return ivf_pq()->search(queries, k, options);
}

} // namespace darcy::compute::mips
