// Embedding shards placed on a cluster under a supervisor in this process: shard i prefers
// the i-th target's node, then the others in turn. A shard whose node dies (or is declared
// down) is started again on another live node and registered under its service name again,
// where the embedding master finds it and refills it from the checkpoint directory.
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "messages/cluster/cluster_interfaces.hpp"
#include "messages/embedding/embedding_interfaces.hpp"
#include "runtime/cluster/spawn_on.hpp"

namespace darcy::ops {

class session;

struct supervised_shards {
  supervisor_actor supervisor;
  std::vector<embedding_shard_actor> shards;
  /// The registry names of the shards, in shard order.
  std::vector<std::string> services;
};

/// Starts one shard per entry of `targets` (which may repeat a node) and waits until all are
/// running. Service names are `<prefix>.shard.<i>`; `prefix` must be unique in the cluster.
/// Fails with the supervisor's reason when it gives up, or errc::timeout.
caf::expected<supervised_shards> start_supervised_shards(
  session& s, const std::vector<runtime::spawn_target>& targets, const std::string& prefix);

} // namespace darcy::ops
