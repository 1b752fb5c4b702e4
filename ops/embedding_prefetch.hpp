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
/// in-process session (direct path); in a session without that path it does nothing yet.
/// A table not created yet is passed over. Fails as a store's prefetch does.
caf::error prefetch_rows(session& s, std::vector<table_lookup> tables);

} // namespace darcy::ops
