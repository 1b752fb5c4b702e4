// The look-ahead of a trainer over tables larger than memory: a batch's keys handed to the
// embedding service before the step that looks them up, so that the shards bring their rows
// from disk into memory meanwhile (embedding_store::prefetch).
#pragma once

#include <vector>

#include <caf/error.hpp>

#include "ops/embedding_ops.hpp"

namespace darcy::ops {

/// Hands the keys of `tables` to the service ahead of the lookup that will ask for them (the
/// trainer's look-ahead): each shard brings their rows into its memory tier
/// (embedding_store::prefetch) and keeps them there until that lookup. Creates no row and
/// changes nothing a lookup answers. Runs in the caller's thread on the shards of an
/// in-process session (direct path), and fails as a store's prefetch does; a session that goes
/// straight to a cluster's shards (session_options::direct_shards) sends each shard its keys
/// and returns at once (a shard logs a store's failure); a session whose requests go through
/// the master does nothing. A table not created yet is passed over.
caf::error prefetch_rows(session& s, std::vector<table_lookup> tables);

} // namespace darcy::ops
