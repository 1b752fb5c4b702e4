#include "actors/actor_types.hpp"

#include "actors/echo_service.hpp"
#include "actors/embedding_shard.hpp"

namespace darcy::actors {

void register_actor_types(runtime::system_config& cfg) {
  cfg.add_actor_type("darcy.echo", echo_service);
  cfg.add_actor_type("darcy.embedding_shard", embedding_shard);
}

} // namespace darcy::actors
