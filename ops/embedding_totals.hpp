// The counters of several embeddings summed: what a job's tables hold and how their tiers
// served it, for the lines that runs print (`darcy estimator ctr`, a distributed job's chief).
#pragma once

#include <set>
#include <string>

#include <caf/expected.hpp>

#include "messages/embedding/embedding_interfaces.hpp"
#include "ops/session.hpp"

namespace darcy::ops {

/// The sums over `names` of ops::stats' rows, bytes, tiers' counters, evictions and dropped
/// updates (the ANN fields and the master's retry counts stay 0). Fails with the first table's
/// error (errc::unknown_embedding for a name the service does not hold).
caf::expected<embedding_stats> total_stats(session& s, const std::set<std::string>& names);

} // namespace darcy::ops
