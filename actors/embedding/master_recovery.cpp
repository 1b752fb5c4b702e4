#include "actors/embedding/master_recovery.hpp"

#include <numeric>

#include "actors/embedding/master_queue.hpp"
#include "runtime/log.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::actors::master {

void recover_pending(embedding_master_pointer self) {
  auto& st = self->state;
  if (st.exclusive || st.to_recover.empty())
    return;
  auto index = *st.to_recover.begin();
  st.to_recover.erase(st.to_recover.begin());
  run_exclusive(self, [self, index] {
    auto& opts = self->state.options;
    auto manifest = opts.checkpoint_dir.empty()
                      ? caf::expected<checkpoint_manifest>{make_error(errc::not_found)}
                      : stores::checkpoint_dir{opts.checkpoint_dir}.read_manifest();
    auto refilled = manifest ? "the checkpoint of step " + std::to_string(manifest->step)
                             : std::string{"empty tables (no checkpoint)"};
    auto done = [self, index, refilled](const caf::error& err) {
      auto& st = self->state;
      if (err) {
        runtime::log_error("embedding master: shard recovery failed: {}", render(err));
      } else {
        st.down.erase(index);
        ++st.recovered_shards;
        if (st.updates_since_checkpoint > 0 && st.diverged.empty())
          st.diverged = "shard " + std::to_string(index) + " was lost and refilled from " +
                        refilled + ", while the other shards kept " +
                        std::to_string(st.updates_since_checkpoint) +
                        " later update(s): restore a checkpoint to go on";
      }
      end_exclusive(self);
    };
    if (manifest) {
      auto shared = std::make_shared<checkpoint_manifest>(std::move(*manifest));
      auto id = new_request_id(self);
      fan_out<ok_atom>(
        {index},
        [=](size_t s, uint32_t attempt) {
          auto& opts = self->state.options;
          return ask_shard(self, s, attempt, load_part_atom::value, opts.checkpoint_dir, *shared,
                           static_cast<uint32_t>(s), static_cast<uint32_t>(opts.shards.size()), id);
        },
        [](size_t, ok_atom) {}, done, file_retries(self));
      return;
    }
    auto configs = std::make_shared<std::vector<de_config>>();
    for (auto& [name, cfg] : self->state.configs)
      configs->push_back(cfg);
    std::vector<size_t> all(configs->size());
    std::iota(all.begin(), all.end(), 0);
    fan_out<ok_atom>(
      all,
      [=](size_t c, uint32_t attempt) {
        return ask_shard(self, index, attempt, create_atom::value, (*configs)[c]);
      },
      [](size_t, ok_atom) {}, done, retries(self));
  });
}

void on_cluster_event(embedding_master_pointer self, const cluster_event& event) {
  auto& names = self->state.options.shard_services;
  auto i = std::find(names.begin(), names.end(), event.service);
  if (i == names.end())
    return;
  auto index = static_cast<size_t>(i - names.begin());
  // Holds new requests back from shard `index` until it is refilled, and fails those waiting
  // on it: the lost shard would only let them time out, and a retry would reach its successor
  // before the refill, which holds no tables yet.
  auto take_down = [self, index](const std::string& why) {
    auto err = make_error(errc::node_unreachable, why);
    self->state.down.insert(index);
    for (auto& weak : self->state.fan_outs)
      if (auto state = weak.lock())
        state->abort_if_waiting(index, err);
  };
  if (event.kind == cluster_event_kind::service_down) {
    // The down event of a shard already replaced (below) is news of the past.
    if (event.actor && event.actor != caf::actor_cast<caf::actor>(shard(self, index)))
      return;
    take_down("shard " + event.service + " went down: " + event.reason);
    return;
  }
  if (event.kind != cluster_event_kind::service_up)
    return;
  auto fresh = caf::actor_cast<embedding_shard_actor>(event.actor);
  if (fresh == shard(self, index))
    return;
  // The down event of the shard it replaces may come later or not at all.
  take_down("shard " + event.service + " was replaced before it answered");
  self->state.options.shards[index] = fresh;
  self->state.to_recover.insert(index);
  recover_pending(self);
}

void on_shard_down(embedding_master_pointer self, const caf::down_msg& msg) {
  auto& shards = self->state.options.shards;
  for (size_t index = 0; index < shards.size(); ++index) {
    if (caf::actor_cast<caf::actor_addr>(shards[index]) != msg.source)
      continue;
    auto err = make_error(errc::node_unreachable, "shard " + std::to_string(index) +
                                                    " went down: " + to_string(msg.reason));
    for (auto& weak : self->state.fan_outs)
      if (auto state = weak.lock())
        state->abort_if_waiting(index, err);
  }
}

} // namespace darcy::actors::master
