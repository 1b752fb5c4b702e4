// Retrieval serving's entry point for apps: start the root of a served model on a session's
// cluster (its shard servers on the live members, or in this process for an in-process
// session). The root loads the newest export version, hot-swaps later ones, and answers top-k
// (actors/serving/serving_root.hpp); the app puts a front end, such as HTTP, before it.
//
//   auto root = ops::serve_model(session, {.model = "artists", .model_dir = "exports/artists"});
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "actors/serving/serving_root.hpp"
#include "ops/session.hpp"

namespace darcy::ops {

/// The members that may host shard servers: every live member of the session's cluster, or
/// none (this process) for an in-process session. errc::no_live_node when a cluster has none.
caf::expected<std::vector<std::string>> shard_server_nodes(session& s);

/// Spawns the root of `cfg.model` in this process, its shard servers on cfg.nodes (empty: in
/// this process; shard_server_nodes gives a cluster's). The root stops with the session's actor
/// system or an exit message.
serving_root_actor serve_model(session& s, actors::serving_root_config cfg);

} // namespace darcy::ops
