#include "ops/supervised_shards.hpp"

#include "actors/embedding/embedding_shard.hpp"
#include "ops/supervised_group.hpp"

namespace darcy::ops {

caf::expected<supervised_shards> start_supervised_shards(
  session& s, const std::vector<runtime::spawn_target>& targets, const std::string& prefix) {
  group_spec spec{prefix, "shard", actors::embedding_shard_state::name, targets.size(),
                  [](size_t i) { return caf::make_message(static_cast<uint32_t>(i)); }};
  auto group = start_supervised_group(s, targets, spec);
  if (!group)
    return std::move(group.error());
  supervised_shards result{group->supervisor, {}, group->services};
  for (auto& a : group->actors)
    result.shards.push_back(caf::actor_cast<embedding_shard_actor>(a));
  return result;
}

} // namespace darcy::ops
