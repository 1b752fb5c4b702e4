// `darcy serve`: every model exported under EXPORTS (one folder per model, as `darcy wals
// export` or an Estimator's export_model writes them) behind one HTTP front end. Each retrieval
// model gets a root in this process; its shard servers run here (no cluster) or on the members
// of a running cluster. Estimator models answer :predict in this process, their dynamic
// embeddings here or on shards on the cluster's members.
#pragma once

#include <optional>
#include <string>

#include <caf/error.hpp>

#include "apps/serving/replica_set.hpp"
#include "runtime/host_port.hpp"

namespace darcy::serving {

struct serve_job {
  std::string exports;
  runtime::host_port listen{"127.0.0.1", 8080};
  /// A running cluster's seed; none: an in-process cluster.
  std::optional<runtime::host_port> cluster;
  /// The TOML file of tokens, ACLs, quotas and limits (serve_config.hpp); empty: defaults.
  std::string config;
  size_t http_threads = 2;
  size_t actor_threads = 0;
  uint32_t probes = 8;
  uint32_t rerank = 30;
  uint32_t ef = 64;
  /// serving_root_config::shard_batches_in_flight and shard_batch_limit.
  uint32_t shard_batches = 1;
  uint32_t batch_limit = 64;
  /// serving_root_config::shard_attempt_ms.
  uint32_t shard_attempt_ms = 50;
  /// Estimator models' dynamic embeddings: 0 in this process; else this many shards on each
  /// member of `cluster` (which it needs), loaded from the export, with lookups going from
  /// this process straight to them (ops::estimator::embedding_placement).
  size_t embedding_shards = 0;
  /// Copies of those shards, each on members of its own, and how long a prediction waits for
  /// one before it asks the next (replicated_model.hpp).
  replica_options replicas;
  /// Where the syncs that arrive as messages are kept, a folder per model (empty: temporary
  /// folders, removed at exit).
  std::string sync_dir;
};

/// Serves until SIGTERM or SIGINT; prints "darcy serve listening on http://HOST:PORT" once it
/// accepts requests, after a line saying who may load and unload models. A model whose export
/// fails its checks (a damaged manifest or config, an Estimator export that does not load) is
/// logged and left out; the others are served. Must be called from the main thread before
/// other threads start. Fails when the config is invalid, EXPORTS holds no export or only
/// exports that fail their checks, the cluster cannot be reached, or the address cannot be
/// bound.
caf::error run_serve(const serve_job& job);

} // namespace darcy::serving
