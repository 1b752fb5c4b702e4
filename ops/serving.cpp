#include "ops/serving.hpp"

#include "messages/error.hpp"

namespace darcy::ops {

caf::expected<std::vector<std::string>> shard_server_nodes(session& s) {
  if (s.in_process())
    return std::vector<std::string>{};
  auto status = s.status();
  if (!status)
    return std::move(status.error());
  std::vector<std::string> nodes;
  for (auto& m : status->members)
    if (m.state == member_state::up)
      nodes.push_back(m.name);
  if (nodes.empty())
    return make_error(errc::no_live_node, "the cluster has no live member for shard servers");
  return nodes;
}

serving_root_actor serve_model(session& s, actors::serving_root_config cfg) {
  return s.system().spawn(actors::serving_root, std::move(cfg));
}

} // namespace darcy::ops
