// The embedding shard: owns, for every embedding, the rows whose key hash falls on this shard,
// and runs lookups and in-shard optimizer updates on them. Behaviour only: the rows and the
// math live in stores/ and compute/.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "messages/embedding.hpp"
#include "stores/embedding_store.hpp"

namespace darcy::actors {

struct embedding_shard_state {
  struct table {
    de_config config;
    std::unique_ptr<stores::embedding_store> store;
  };
  std::map<std::string, table> tables;
  static inline const char* name = "darcy.embedding_shard";
};

embedding_shard_actor::behavior_type
embedding_shard(embedding_shard_actor::stateful_pointer<embedding_shard_state> self);

} // namespace darcy::actors
