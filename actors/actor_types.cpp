#include "actors/actor_types.hpp"

#include "actors/cluster/echo_service.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "actors/wals/factor_shard.hpp"
#include "actors/wals/wals_chief.hpp"
#include "actors/wals/wals_worker.hpp"

namespace darcy::actors {

void register_actor_types(runtime::system_config& cfg) {
  cfg.add_actor_type("darcy.echo", echo_service);
  cfg.add_actor_type("darcy.embedding_shard", embedding_shard);
  cfg.add_actor_type("darcy.factor_shard", factor_shard);
  cfg.add_actor_type("darcy.wals_chief", wals_chief);
  cfg.add_actor_type("darcy.wals_worker", wals_worker_loading);
}

} // namespace darcy::actors
