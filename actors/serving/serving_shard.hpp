// A shard server of retrieval serving: holds one shard sub-model of one export version (its
// index, IVF-PQ or graph, loaded from the export) and the items added to it while it serves (a
// live index searched exactly), and answers top-k over both. Interface and contract:
// serving_shard_actor (messages/serving/serving_interfaces.hpp).
#pragma once

#include <memory>
#include <unordered_set>
#include <vector>

#include "compute/mips/mips_index.hpp"
#include "messages/serving/serving_interfaces.hpp"

namespace darcy::actors {

struct serving_shard_state {
  serving_shard_config config;
  std::shared_ptr<const compute::mips::mips_index> index;
  /// The live index: added_ids.size() rows of the index's dimension, in the order added.
  std::vector<float> added;
  std::vector<uint64_t> added_ids;
  std::unordered_set<uint64_t> added_set;
  uint64_t answered = 0;
  uint64_t expired = 0;
  static inline const char* name = "darcy.serving_shard";
};

using serving_shard_pointer = serving_shard_actor::stateful_pointer<serving_shard_state>;

/// Loads the shard named by `config` before it answers anything; exits with the load's error
/// (errc::not_found, errc::corrupt_file, errc::invalid_argument) when it cannot.
serving_shard_actor::behavior_type serving_shard(serving_shard_pointer self,
                                                 serving_shard_config config);

} // namespace darcy::actors
