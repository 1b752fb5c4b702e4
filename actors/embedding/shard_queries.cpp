#include "actors/embedding/shard_queries.hpp"

#include "actors/embedding/full_logits_scan.hpp"
#include "actors/embedding/top_k_scan.hpp"
#include "messages/error.hpp"
#include "runtime/log.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::actors::shard_queries {

namespace {

caf::expected<embedding_shard_state::table*> find_table(shard_pointer self,
                                                        const std::string& name) {
  return stores::find_embedding(self->state.tables(), name);
}

} // namespace

caf::result<top_k_result> top_k(shard_pointer self, const std::string& name,
                                const std::vector<float>& queries, uint32_t k, top_k_score score) {
  auto table = find_table(self, name);
  if (!table)
    return std::move(table.error());
  auto result = scan_top_k(*(*table)->store, queries, k, score);
  if (!result)
    return std::move(result.error());
  return std::move(*result);
}

caf::result<top_k_result> approximate_top_k(shard_pointer self, const std::string& name,
                                            const std::vector<float>& queries, uint32_t k,
                                            top_k_score score, const ann_query& q) {
  auto table = find_table(self, name);
  if (!table)
    return std::move(table.error());
  auto result = actors::approximate_top_k(**table, queries, k, score, q);
  if (!result)
    return std::move(result.error());
  return std::move(*result);
}

caf::result<full_logits_part> full_logits(shard_pointer self, const std::string& name,
                                          const std::vector<float>& queries, uint64_t max_rows) {
  auto table = find_table(self, name);
  if (!table)
    return std::move(table.error());
  auto result = scan_logits(*(*table)->store, queries, max_rows);
  if (!result)
    return std::move(result.error());
  return std::move(*result);
}

caf::result<std::vector<float>> full_backward(shard_pointer self, const std::string& name,
                                              const std::vector<std::string>& keys,
                                              const std::vector<float>& queries,
                                              const std::vector<float>& dlogits, int64_t step,
                                              uint64_t request_id) {
  auto table = find_table(self, name);
  if (!table)
    return std::move(table.error());
  bool apply = !self->state.applied.seen(request_id);
  auto dq = apply_logit_gradients(*(*table)->store, keys, queries, dlogits, step, apply);
  if (!dq)
    return std::move(dq.error());
  if (apply)
    self->state.applied.remember(request_id);
  return std::move(*dq);
}

caf::result<sample_stats> sample_metadata(shard_pointer self, const std::string& name,
                                          const std::vector<std::string>& positives) {
  auto table = find_table(self, name);
  if (!table)
    return std::move(table.error());
  auto result = (*table)->store->sample_metadata(positives);
  if (!result)
    return std::move(result.error());
  return std::move(*result);
}

caf::result<sample_result> sample_part(shard_pointer self, const std::string& name,
                                       const sample_plan& plan) {
  auto table = find_table(self, name);
  if (!table)
    return std::move(table.error());
  auto result = (*table)->store->sample(plan);
  if (!result)
    return std::move(result.error());
  return std::move(*result);
}

void prefetch(shard_pointer self, const std::vector<table_keys>& tables) {
  for (auto& part : tables) {
    auto table = self->state.tables().find(part.name);
    if (part.keys.empty() || table == self->state.tables().end())
      continue;
    if (auto err = table->second.store->prefetch(part.keys.views(), part.keys.hashes()))
      runtime::log_warn("embedding shard {}: a look-ahead of {} keys of {}: {}", self->state.index,
                        part.keys.size(), part.name, render(err));
  }
}

} // namespace darcy::actors::shard_queries
