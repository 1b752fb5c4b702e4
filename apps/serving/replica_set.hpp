// Which cluster members hold each copy of a served model's embedding shards (`darcy serve
// --replicas R`), in which order a request tries the copies, and where a copy that lost a shard
// is loaded again. Pure functions of member names: estimator_model keeps the copies.
//
//   auto groups = assign_replicas({"a", "b", "c", "d"}, 2); // {{"a", "c"}, {"b", "d"}}
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <caf/expected.hpp>

namespace darcy::serving {

/// How an Estimator model with its embeddings on a cluster's shards is replicated.
struct replica_options {
  /// Copies of the embedding shards, each on members of its own; 1: one copy on every member.
  size_t replicas = 1;
  /// A predict's lookups on one copy not answered within this many milliseconds go to the next
  /// copy; the last copy tried gets what is left of the request's deadline.
  uint32_t attempt_ms = 500;
};

/// The members of each of `replicas` copies: member i of `up` (sorted by name) holds copy
/// i % replicas. errc::invalid_config for 0 copies or fewer members than copies.
caf::expected<std::vector<std::vector<std::string>>> assign_replicas(std::vector<std::string> up,
                                                                     size_t replicas);

/// Where a copy that lost a shard is loaded again: the members of `up` that hold no shard of a
/// copy in `in_service`, sorted. Empty when every member up serves another copy.
std::vector<std::string> reload_members(std::vector<std::string> up,
                                        const std::vector<std::vector<std::string>>& in_service);

/// Whether every one of `members` is in `up`.
bool all_up(const std::vector<std::string>& members, const std::vector<std::string>& up);

/// The copies in the order a request tries them: those in service first, from copy `first`
/// on round the ring, then the others in the same order. `serving[i]` is copy i's state.
std::vector<size_t> attempt_order(const std::vector<bool>& serving, size_t first);

} // namespace darcy::serving
