// The embedding shard's requests that score, draw or fetch its rows without changing them (top-k,
// full logits, sampling metadata and draws, a trainer's look-ahead), and the backward of full
// logits, which applies its gradients under a request id. Internal to actors/embedding/: the
// shard's behavior calls them.
#pragma once

#include <string>
#include <vector>

#include "actors/embedding/embedding_shard.hpp"

namespace darcy::actors::shard_queries {

using shard_pointer = embedding_shard_actor::stateful_pointer<embedding_shard_state>;

caf::result<top_k_result> top_k(shard_pointer self, const std::string& name,
                                const std::vector<float>& queries, uint32_t k, top_k_score score);

/// Answers from the table's ANN index (errc::invalid_config without one), first indexing the
/// changes older than q.max_staleness_ms.
caf::result<top_k_result> approximate_top_k(shard_pointer self, const std::string& name,
                                            const std::vector<float>& queries, uint32_t k,
                                            top_k_score score, const ann_query& q);

caf::result<full_logits_part> full_logits(shard_pointer self, const std::string& name,
                                          const std::vector<float>& queries, uint64_t max_rows);

/// Applies the gradients once per request id (0: always); a repeat answers d(queries) again.
caf::result<std::vector<float>> full_backward(shard_pointer self, const std::string& name,
                                              const std::vector<std::string>& keys,
                                              const std::vector<float>& queries,
                                              const std::vector<float>& dlogits, int64_t step,
                                              uint64_t request_id);

caf::result<sample_stats> sample_metadata(shard_pointer self, const std::string& name,
                                          const std::vector<std::string>& positives);

caf::result<sample_result> sample_part(shard_pointer self, const std::string& name,
                                       const sample_plan& plan);

/// Brings the rows of `tables`' keys into each store's memory tier (embedding_store::prefetch);
/// tables the shard does not hold are passed over, and a store's failure is logged: a lookup
/// of those keys meets it again and answers it.
void prefetch(shard_pointer self, const std::vector<table_keys>& tables);

} // namespace darcy::actors::shard_queries
