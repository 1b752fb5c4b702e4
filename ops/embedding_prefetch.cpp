#include "ops/embedding_prefetch.hpp"

#include <shared_mutex>

#include "actors/embedding/direct_embedding.hpp"
#include "actors/embedding/key_routing.hpp"
#include "actors/embedding/shard_client.hpp"

namespace darcy::ops {

caf::error prefetch_rows(session& s, std::vector<table_lookup> tables) {
  std::vector<table_keys> request;
  for (auto& t : tables) {
    auto keys = t.hashed.empty() ? actors::hash_keys(t.keys) : std::move(t.hashed);
    if (!keys.empty())
      request.push_back({t.name, std::move(keys)});
  }
  if (request.empty())
    return {};
  if (auto shards = s.shard_client()) {
    shards->prefetch(std::move(request));
    return {};
  }
  auto direct = s.direct_embeddings();
  if (!direct)
    return {};
  std::shared_lock<std::shared_mutex> gate{s.direct_gate()};
  return direct->prefetch(request);
}

} // namespace darcy::ops
