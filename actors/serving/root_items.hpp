// Items a served model gains while it serves (WALS's cold start of an item): the root projects
// each one, gives it the next id, puts it into the live index of shard id % shards, and names
// it in answers once every shard confirmed. A restarted shard server gets its items again.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "actors/serving/serving_root.hpp"

namespace darcy::actors {

/// Adds `request`'s items to the version serving, all or none (serving_root_actor's add), if
/// the access rules let its principal manage the model `now_s` seconds after the root started.
caf::result<add_items_response> add_items(serving_root_pointer self,
                                          const add_items_request& request, double now_s);

/// Sends shard `shard` of `v`, a server just restarted, the items it had confirmed.
void resend_items(serving_root_pointer self, const std::shared_ptr<served_version>& v,
                  uint32_t shard);

/// Drops the hits of added items whose add is not confirmed: they are never served.
void drop_unconfirmed(const served_version& v, std::vector<std::vector<compute::hit>>& hits);

/// The name of item `id` in answers of `v`: the export's, or an added item's once confirmed;
/// nullopt for an added id not confirmed.
std::optional<std::string> served_item_name(const served_version& v, uint64_t id);

} // namespace darcy::actors
