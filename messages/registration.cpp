#include "messages/registration.hpp"

#include "messages/checkpoint.hpp"
#include "messages/cluster/chaos_messages.hpp"
#include "messages/cluster/cluster_interfaces.hpp"
#include "messages/cluster/membership.hpp"
#include "messages/cluster/probe_messages.hpp"
#include "messages/cluster/supervision.hpp"
#include "messages/embedding/embedding_config.hpp"
#include "messages/embedding/embedding_interfaces.hpp"
#include "messages/error.hpp"
#include "messages/estimator/estimator_interfaces.hpp"
#include "messages/moe/moe_interfaces.hpp"
#include "messages/serving/serving_interfaces.hpp"
#include "messages/wals/wals_interfaces.hpp"
#include "messages/wals/wals_values.hpp"

namespace darcy {

void register_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<member_info>("darcy.member_info")
    .add_message_type<service_info>("darcy.service_info")
    .add_message_type<cluster_event>("darcy.cluster_event")
    .add_message_type<cluster_status>("darcy.cluster_status")
    .add_message_type<child_spec>("darcy.child_spec")
    .add_message_type<supervisor_spec>("darcy.supervisor_spec")
    .add_message_type<child_info>("darcy.child_info")
    .add_message_type<supervisor_event>("darcy.supervisor_event")
    .add_message_type<probe_spec>("darcy.probe_spec")
    .add_message_type<probe_result>("darcy.probe_result")
    .add_message_type<disruption>("darcy.disruption")
    .add_message_type<chaos_stats>("darcy.chaos_stats")
    .add_message_type<chaos_command>("darcy.chaos_command")
    .add_message_type<de_config>("darcy.de_config")
    .add_message_type<embedding_stats>("darcy.embedding_stats")
    .add_message_type<std::vector<float>>("darcy.floats")
    .add_message_type<top_k_result>("darcy.top_k_result")
    .add_message_type<ann_query>("darcy.ann_query")
    .add_message_type<top_k_score>("darcy.top_k_score")
    .add_message_type<key_batch>("darcy.key_batch")
    .add_message_type<table_keys>("darcy.table_keys")
    .add_message_type<std::vector<table_keys>>("darcy.tables_keys")
    .add_message_type<std::vector<shared_floats>>("darcy.shared_floats_list")
    .add_message_type<lookup_reply>("darcy.lookup_reply")
    .add_message_type<shard_route>("darcy.shard_route")
    .add_message_type<full_logits_part>("darcy.full_logits_part")
    .add_message_type<sample_result>("darcy.sample_result")
    .add_message_type<sample_stats>("darcy.sample_stats")
    .add_message_type<sample_plan>("darcy.sample_plan")
    .add_message_type<file_info>("darcy.file_info")
    .add_message_type<checkpoint_embedding>("darcy.checkpoint_embedding")
    .add_message_type<checkpoint_manifest>("darcy.checkpoint_manifest")
    .add_message_type<wals_checkpoint>("darcy.wals_checkpoint")
    .add_message_type<std::vector<file_info>>("darcy.file_infos")
    .add_message_type<registry_actor>("darcy.registry_actor")
    .add_message_type<std::vector<uint32_t>>("darcy.u32s")
    .add_message_type<shared_floats>("darcy.shared_floats")
    .add_message_type<factor_snapshot>("darcy.factor_snapshot")
    .add_message_type<wals_side>("darcy.wals_side")
    .add_message_type<wals_params>("darcy.wals_params")
    .add_message_type<wals_token>("darcy.wals_token")
    .add_message_type<wals_commit>("darcy.wals_commit")
    .add_message_type<wals_token_id>("darcy.wals_token_id")
    .add_message_type<wals_progress>("darcy.wals_progress")
    .add_message_type<std::vector<wals_event>>("darcy.wals_events")
    .add_message_type<wals_shard_config>("darcy.wals_shard_config")
    .add_message_type<wals_worker_config>("darcy.wals_worker_config")
    .add_message_type<wals_chief_config>("darcy.wals_chief_config")
    .add_message_type<factor_shard_actor>("darcy.factor_shard_actor")
    .add_message_type<std::vector<factor_shard_actor>>("darcy.factor_shard_actors")
    .add_message_type<wals_worker_actor>("darcy.wals_worker_actor")
    .add_message_type<wals_chief_actor>("darcy.wals_chief_actor")
    .add_message_type<request_context>("darcy.request_context")
    .add_message_type<moe_config>("darcy.moe_config")
    .add_message_type<row_block>("darcy.row_block")
    .add_message_type<expert_config>("darcy.expert_config")
    .add_message_type<moe_router_config>("darcy.moe_router_config")
    .add_message_type<moe_router_status>("darcy.moe_router_status")
    .add_message_type<moe_save_request>("darcy.moe_save_request")
    .add_message_type<expert_actor>("darcy.expert_actor")
    .add_message_type<moe_router_actor>("darcy.moe_router_actor")
    .add_message_type<serving_shard_config>("darcy.serving_shard_config")
    .add_message_type<shard_query>("darcy.shard_query")
    .add_message_type<shard_hits>("darcy.shard_hits")
    .add_message_type<shard_batch>("darcy.shard_batch")
    .add_message_type<shard_batch_hits>("darcy.shard_batch_hits")
    .add_message_type<shard_status>("darcy.shard_status")
    .add_message_type<query_kind>("darcy.query_kind")
    .add_message_type<topk_request>("darcy.topk_request")
    .add_message_type<topk_response>("darcy.topk_response")
    .add_message_type<new_item>("darcy.new_item")
    .add_message_type<add_items_request>("darcy.add_items_request")
    .add_message_type<add_items_response>("darcy.add_items_response")
    .add_message_type<shard_items>("darcy.shard_items")
    .add_message_type<latency_histogram>("darcy.latency_histogram")
    .add_message_type<shard_health>("darcy.shard_health")
    .add_message_type<principal_counters>("darcy.principal_counters")
    .add_message_type<model_state>("darcy.model_state")
    .add_message_type<model_status>("darcy.model_status")
    .add_message_type<serving_shard_actor>("darcy.serving_shard_actor")
    .add_message_type<named_tensors>("darcy.named_tensors")
    .add_message_type<ps_state>("darcy.ps_state")
    .add_message_type<ps_config>("darcy.ps_config")
    .add_message_type<worker_config>("darcy.worker_config")
    .add_message_type<parameter_server_actor>("darcy.parameter_server_actor")
    .add_message_type<std::vector<parameter_server_actor>>("darcy.parameter_server_actors");
  cfg.add_error_category(errc_category,
                         [](uint8_t code, caf::atom_value, const caf::message& context) {
                           return render_errc(code, context);
                         });
}

} // namespace darcy
