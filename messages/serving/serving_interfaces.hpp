// The typed interfaces of retrieval serving: a shard server answers top-k over its partition of
// one export version; a model's root projects queries, fans them out to the shards of the
// version it serves, merges, and manages versions (load, hot swap, unload).
#pragma once

#include <string>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/cluster/supervision.hpp"
#include "messages/serving/serving_values.hpp"

namespace darcy {

/// One shard sub-model of one export version, loaded (mapped) when the actor starts; an actor
/// whose shard cannot be loaded exits with the load's error. topk refuses a query whose deadline
/// has passed on arrival (errc::deadline_exceeded, nothing searched), a vector of another
/// dimension, a NaN value, and k of 0 (errc::invalid_argument); k above the shard's items
/// answers all of them. A batch answers each of its queries as topk(shard_query) would, in
/// order; one bad query fails only itself. add(items) puts items into the shard's live index,
/// searched exactly beside its export's: errc::dimension_mismatch for vectors of another size,
/// errc::invalid_argument for a NaN; an id it holds already is skipped (a resent add changes
/// nothing).
using serving_shard_actor =
  caf::typed_actor<caf::replies_to<topk_atom, shard_query>::with<shard_hits>,
                   caf::replies_to<topk_atom, shard_batch>::with<shard_batch_hits>,
                   caf::replies_to<add_atom, shard_items>::with<ok_atom>,
                   caf::replies_to<status_atom>::with<shard_status>>;

/// The root of one model. A load starts the version's shard servers under a supervisor, waits
/// until every one of them answers, then loads the root sub-model, and only then switches
/// requests to the new version (the first load makes the model available). The old version's
/// shards stop after their last request.
///
/// topk fails with errc::unavailable while no version is loaded; errc::access_denied or
/// errc::quota_exceeded by the access rules, before any work; errc::not_found for an unknown
/// user or only unknown items; errc::invalid_argument or errc::dimension_mismatch for a bad
/// query. At the deadline it answers what the shards gave, flagged partial, when the request
/// allows it, and errc::deadline_exceeded naming the missing shards otherwise. A shard that is
/// down counts as missing at once. tick(deadline_us) is the root's own deadline timer.
/// load(context, version) answers the version loaded (empty: the newest); errc::access_denied
/// unless the principal may manage, errc::not_found for an unknown version, and the load's
/// error when a shard or the root cannot load (the serving version is kept).
/// add(request) projects each new item and puts it into the live index of its shard (id i goes
/// to shard i % shards), all or none, answering once every shard holds them: errc::access_denied
/// unless the principal may manage; errc::invalid_argument for a name the model has or that
/// is given twice, an item of neither features nor users; errc::not_found for one of which
/// nothing is known; errc::unsupported for an export without the users' Gramian;
/// errc::unavailable while no version serves or a shard is down. Added items belong to the
/// version serving: a restarted shard server gets them again, a new version does not.
using serving_root_actor =
  caf::typed_actor<caf::replies_to<topk_atom, topk_request>::with<topk_response>,
                   caf::replies_to<add_atom, add_items_request>::with<add_items_response>,
                   caf::replies_to<load_atom, request_context, std::string>::with<std::string>,
                   caf::replies_to<unload_atom, request_context>::with<ok_atom>,
                   caf::replies_to<status_atom>::with<model_status>,
                   caf::reacts_to<supervisor_event>, caf::reacts_to<tick_atom, uint64_t>>;

} // namespace darcy
