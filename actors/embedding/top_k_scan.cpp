#include "actors/embedding/top_k_scan.hpp"

#include "compute/top_k.hpp"
#include "messages/error.hpp"
#include "stores/embedding/indexed_store.hpp"

namespace darcy::actors {

namespace {

constexpr Eigen::Index block_rows = 8192;

} // namespace

caf::error check_top_k_request(size_t dim, size_t query_values, uint32_t k, top_k_score score) {
  auto qdim = score == top_k_score::inner_product_bias ? dim - 1 : dim;
  if (k == 0)
    return make_error(errc::invalid_argument, "top_k needs k >= 1");
  if (dim == 0 || qdim == 0 || query_values == 0 || query_values % qdim != 0)
    return make_error(errc::dimension_mismatch, std::to_string(query_values) +
                                                  " query values are not a whole number of " +
                                                  std::to_string(qdim) + "-dimensional queries");
  return {};
}

caf::expected<top_k_result> scan_top_k(stores::embedding_store& store,
                                       const std::vector<float>& queries, uint32_t k,
                                       top_k_score score) {
  if (auto err = check_top_k_request(store.dim(), queries.size(), k, score))
    return err;
  auto dim = static_cast<Eigen::Index>(store.dim());
  bool with_bias = score == top_k_score::inner_product_bias;
  bool cosine = score == top_k_score::cosine;
  auto q = compute::extended_queries(queries, dim, with_bias, cosine);
  auto nq = q.rows();
  std::vector<std::string> keys;
  compute::row_matrix block(block_rows, dim);
  std::vector<std::vector<std::vector<compute::hit>>> partial(static_cast<size_t>(nq));
  Eigen::Index filled = 0;
  auto flush = [&] {
    if (filled == 0)
      return;
    compute::row_matrix rows = block.topRows(filled);
    if (cosine)
      compute::normalise_rows(rows);
    auto hits = compute::top_k_inner_product(q, rows, {}, k);
    for (Eigen::Index i = 0; i < nq; ++i) {
      auto& list = (*hits)[static_cast<size_t>(i)];
      for (auto& h : list)
        h.id += keys.size() - static_cast<size_t>(filled);
      partial[static_cast<size_t>(i)].push_back(std::move(list));
    }
    filled = 0;
  };
  auto err = store.scan([&](std::string_view key, std::span<const float> values) {
    block.row(filled) = Eigen::Map<const Eigen::RowVectorXf>(values.data(), dim);
    keys.emplace_back(key);
    if (++filled == block_rows)
      flush();
  });
  if (err)
    return err;
  flush();
  top_k_result result;
  result.offsets.push_back(0);
  for (auto& lists : partial) {
    for (auto& h : compute::merge_top_k(lists, k)) {
      result.keys.push_back(keys[h.id]);
      result.scores.push_back(h.score);
    }
    result.offsets.push_back(static_cast<uint32_t>(result.keys.size()));
  }
  return result;
}

caf::expected<top_k_result> approximate_top_k(shard_table& table, const std::vector<float>& queries,
                                              uint32_t k, top_k_score score, const ann_query& q) {
  auto& store = *table.store;
  auto index = store.ann();
  if (index == nullptr)
    return make_error(errc::invalid_config, "embedding '" + table.config.name +
                                              "' keeps no ANN index: enable its ann settings");
  if (auto err = check_top_k_request(store.dim(), queries.size(), k, score))
    return err;
  // The bound holds for the changes noted before now; later ones wait for the next read.
  constexpr size_t chunk = 65536;
  auto bound = static_cast<double>(q.max_staleness_ms) / 1000.0;
  for (auto pending = index->backlog(); pending > 0 && index->oldest_pending_s() >= bound;) {
    auto more = index->refresh(std::min(pending, chunk));
    if (!more)
      return std::move(more.error());
    pending = pending > chunk ? pending - chunk : 0;
  }
  auto& cfg = index->config();
  return index->search(queries, k, score, q.probes != 0 ? q.probes : cfg.probes,
                       q.rerank != 0 ? q.rerank : cfg.rerank);
}

top_k_result merge_top_k_results(const std::vector<top_k_result>& parts, size_t queries,
                                 uint32_t k) {
  top_k_result result;
  result.offsets.push_back(0);
  for (size_t q = 0; q < queries; ++q) {
    // Ids encode (part, position) so that each hit maps back to its key.
    std::vector<std::vector<compute::hit>> lists;
    for (size_t p = 0; p < parts.size(); ++p) {
      auto& part = parts[p];
      std::vector<compute::hit> list;
      for (auto i = part.offsets[q]; i < part.offsets[q + 1]; ++i)
        list.push_back({part.scores[i], (uint64_t{p} << 32) | i});
      lists.push_back(std::move(list));
    }
    for (auto& h : compute::merge_top_k(lists, k)) {
      auto& part = parts[h.id >> 32];
      auto i = static_cast<uint32_t>(h.id & 0xffffffffULL);
      result.keys.push_back(part.keys[i]);
      result.scores.push_back(h.score);
    }
    result.offsets.push_back(static_cast<uint32_t>(result.keys.size()));
  }
  for (auto& part : parts)
    result.staleness_s = std::max(result.staleness_s, part.staleness_s);
  return result;
}

} // namespace darcy::actors
