#include "actors/actor_types.hpp"

#include "actors/cluster/echo_service.hpp"
#include "actors/cluster/file_store.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "actors/estimator/parameter_server.hpp"
#include "actors/moe/expert_actor.hpp"
#include "actors/serving/serving_shard.hpp"
#include "actors/wals/factor_shard.hpp"
#include "actors/wals/wals_chief.hpp"
#include "actors/wals/wals_worker.hpp"
#include "runtime/detached_actor_type.hpp"

namespace darcy::actors {

void register_actor_types(runtime::system_config& cfg) {
  cfg.add_actor_type(echo_service_name, echo_service);
  cfg.add_actor_type(file_store_name, file_store);
  cfg.add_actor_type(embedding_shard_state::name, embedding_shard);
  // A factor shard's Gramian and a worker's block take seconds: off the scheduler, so that the
  // node keeps answering heartbeats meanwhile.
  runtime::add_detached_actor_type(cfg, factor_shard_state::name, factor_shard);
  cfg.add_actor_type(parameter_server_state::name, parameter_server);
  cfg.add_actor_type(expert_state::name, moe_expert);
  cfg.add_actor_type(serving_shard_state::name, serving_shard);
  cfg.add_actor_type(wals_chief_state::name, wals_chief);
  runtime::add_detached_actor_type(cfg, wals_worker_state::name, wals_worker_loading);
}

} // namespace darcy::actors
