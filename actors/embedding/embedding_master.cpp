#include "actors/embedding/embedding_master.hpp"

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "actors/embedding/full_logits_scan.hpp"
#include "actors/embedding/key_routing.hpp"
#include "actors/embedding/master_checkpoint.hpp"
#include "actors/embedding/master_queue.hpp"
#include "actors/embedding/master_recovery.hpp"
#include "actors/embedding/top_k_scan.hpp"
#include "actors/fan_out.hpp"
#include "compute/hash.hpp"
#include "compute/placement.hpp"
#include "messages/cluster/cluster_interfaces.hpp"
#include "messages/error.hpp"
#include "runtime/log.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::actors {

namespace master {
namespace {

caf::result<ok_atom> create(embedding_master_pointer self, de_config cfg) {
  master::place_table(self->state.options, cfg);
  auto promise = self->make_response_promise<ok_atom>();
  fan_out<ok_atom>(
    all_shards(self),
    [=](size_t s, uint32_t attempt) {
      return ask_shard(self, s, attempt, create_atom::value, cfg);
    },
    [](size_t, ok_atom) {},
    deliver_with(promise,
                 [self, cfg] {
                   self->state.configs[cfg.name] = cfg;
                   return ok_atom::value;
                 }),
    retries(self));
  return promise;
}

config_finder configs_of(embedding_master_pointer self) {
  return [self](const std::string& name) -> caf::expected<const de_config*> {
    auto cfg = stores::find_embedding(self->state.configs, name);
    if (!cfg)
      return std::move(cfg.error());
    return *cfg;
  };
}

// Looks a routed batch up on its shards (keeping `handle` there when not 0) and calls
// done(rows per table in input order) or done(error), after which the in-flight slot is free.
template <class Promise>
void run_lookup(embedding_master_pointer self, Promise promise, std::shared_ptr<routed_batch> batch,
                uint64_t handle,
                std::function<void(caf::expected<std::vector<shared_floats>>)> done) {
  admit(self, promise, [=]() mutable {
    // Every row of every table is written by exactly one shard's scatter before `out` is
    // delivered, so the buffers start uninitialised.
    auto out = std::make_shared<std::vector<shared_floats>>();
    auto spans = std::make_shared<std::vector<std::span<float>>>();
    for (size_t t = 0; t < batch->tables(); ++t) {
      auto [rows, span] = shared_floats::allocate(batch->keys(t) * batch->dim(t));
      out->push_back(std::move(rows));
      spans->push_back(span);
    }
    auto failed = std::make_shared<caf::error>();
    track(self, fan_out<std::vector<shared_floats>>(
                  batch->shards(),
                  [=](size_t s, uint32_t attempt) {
                    return ask_shard(self, s, attempt, lookup_atom::value, batch->part(s), handle);
                  },
                  [=](size_t s, const std::vector<shared_floats>& rows) {
                    if (auto err = batch->scatter(s, rows, *spans); err && !*failed)
                      *failed = std::move(err);
                  },
                  [=](caf::error err) mutable {
                    if (!err)
                      err = *failed;
                    if (err)
                      done(std::move(err));
                    else
                      done(std::move(*out));
                    finished(self);
                  },
                  retries(self)));
  });
}

// Sends each shard its summed gradients as request(shard, grads, attempt) and delivers ok.
template <class Promise, class Request>
void run_update(embedding_master_pointer self, Promise promise, std::shared_ptr<routed_batch> batch,
                const std::vector<std::span<const float>>& grads, Request request,
                std::function<void()> on_success = nullptr) {
  auto per_shard =
    std::make_shared<std::vector<std::vector<shared_floats>>>(self->state.options.shards.size());
  for (auto s : batch->shards())
    (*per_shard)[s] = batch->gather(s, grads);
  admit(self, promise, [=]() mutable {
    ++self->state.updates_since_checkpoint;
    track(self, fan_out<ok_atom>(
                  batch->shards(),
                  [=](size_t s, uint32_t attempt) { return request(s, (*per_shard)[s], attempt); },
                  [](size_t, ok_atom) {},
                  [=](caf::error err) mutable {
                    if (err) {
                      promise.deliver(std::move(err));
                    } else {
                      if (on_success)
                        on_success();
                      promise.deliver(ok_atom::value);
                    }
                    finished(self);
                  },
                  retries(self)));
  });
}

std::vector<table_keys> one_table(const std::string& name, const std::vector<std::string>& keys) {
  return {table_keys{name, hash_keys(keys)}};
}

caf::result<std::vector<float>> lookup(embedding_master_pointer self, const std::string& name,
                                       const std::vector<std::string>& keys) {
  auto tables = one_table(name, keys);
  auto dims = checked_dims(tables, configs_of(self));
  if (!dims)
    return std::move(dims.error());
  auto promise = self->make_response_promise<std::vector<float>>();
  auto batch = std::make_shared<routed_batch>(tables, *dims, self->state.options.shards.size());
  run_lookup(self, promise, batch, 0,
             [promise](caf::expected<std::vector<shared_floats>> rows) mutable {
               if (!rows) {
                 promise.deliver(std::move(rows.error()));
                 return;
               }
               auto values = rows->front().values();
               promise.deliver(std::vector<float>(values.begin(), values.end()));
             });
  return promise;
}

// Remembers a kept lookup for backward, forgetting the oldest past max_pending_lookups.
void remember_lookup(embedding_master_pointer self, uint64_t handle,
                     std::shared_ptr<routed_batch> batch) {
  auto& pending = self->state.pending;
  batch->drop_keys();
  pending.push_back({handle, std::move(batch)});
  if (pending.size() > max_pending_lookups)
    pending.pop_front();
}

caf::result<lookup_reply> lookup_tables(embedding_master_pointer self,
                                        const std::vector<table_keys>& tables, bool keep) {
  auto dims = checked_dims(tables, configs_of(self));
  if (!dims)
    return std::move(dims.error());
  auto promise = self->make_response_promise<lookup_reply>();
  auto batch = std::make_shared<routed_batch>(tables, *dims, self->state.options.shards.size());
  auto handle = keep ? new_request_id(self) : 0;
  run_lookup(self, promise, batch, handle,
             [=](caf::expected<std::vector<shared_floats>> rows) mutable {
               if (!rows) {
                 promise.deliver(std::move(rows.error()));
                 return;
               }
               if (handle != 0)
                 remember_lookup(self, handle, batch);
               promise.deliver(lookup_reply{handle, std::move(*rows)});
             });
  return promise;
}

caf::result<ok_atom> backward(embedding_master_pointer self, uint64_t handle,
                              const std::vector<shared_floats>& grads, int64_t step) {
  auto& pending = self->state.pending;
  auto i = std::find_if(pending.rbegin(), pending.rend(),
                        [&](const auto& p) { return p.handle == handle; });
  if (handle == 0 || i == pending.rend())
    return make_error(errc::not_found,
                      "lookup handle " + std::to_string(handle) +
                        " is not pending at the master: used already, never issued, or older "
                        "than the last " +
                        std::to_string(max_pending_lookups) + " lookups");
  auto batch = i->batch;
  std::vector<std::span<const float>> spans;
  for (auto& g : grads)
    spans.push_back(g.values());
  if (auto err = check_routed_gradients(*batch, spans, configs_of(self)))
    return err;
  auto promise = self->make_response_promise<ok_atom>();
  run_update(
    self, promise, batch, spans,
    [=](size_t s, const std::vector<shared_floats>& part, uint32_t attempt) {
      return ask_shard(self, s, attempt, backward_atom::value, handle, part, step);
    },
    [self, handle] {
      std::erase_if(self->state.pending, [&](const auto& p) { return p.handle == handle; });
    });
  return promise;
}

caf::result<ok_atom> update(embedding_master_pointer self, const std::string& name,
                            const std::vector<std::string>& keys, const std::vector<float>& grads,
                            int64_t step) {
  auto tables = one_table(name, keys);
  auto dims = checked_dims(tables, configs_of(self));
  if (!dims)
    return std::move(dims.error());
  auto batch = std::make_shared<routed_batch>(tables, *dims, self->state.options.shards.size());
  std::vector<std::span<const float>> spans{std::span<const float>{grads}};
  if (auto err = check_routed_gradients(*batch, spans, configs_of(self)))
    return err;
  auto promise = self->make_response_promise<ok_atom>();
  auto id = new_request_id(self);
  run_update(self, promise, batch, spans,
             [=](size_t s, const std::vector<shared_floats>& part, uint32_t attempt) {
               return ask_shard(self, s, attempt, update_atom::value, batch->part(s), part, step,
                                id);
             });
  return promise;
}

/// Exact with no `ann`; otherwise from the shards' ANN indexes.
caf::result<top_k_result> top_k(embedding_master_pointer self, const std::string& name,
                                const std::vector<float>& queries, uint32_t k, top_k_score score,
                                std::optional<ann_query> ann = std::nullopt) {
  auto cfg = stores::find_embedding(self->state.configs, name);
  if (!cfg)
    return std::move(cfg.error());
  if (ann && !(*cfg)->ann.enabled)
    return make_error(errc::invalid_config,
                      "embedding '" + name + "' keeps no ANN index: enable its ann settings");
  if (auto err = check_top_k_request((*cfg)->dim, queries.size(), k, score))
    return err;
  if (!self->state.diverged.empty())
    return diverged_error(self->state);
  auto qdim = (*cfg)->dim - (score == top_k_score::inner_product_bias ? 1u : 0u);
  auto promise = self->make_response_promise<top_k_result>();
  auto parts = std::make_shared<std::vector<top_k_result>>(self->state.options.shards.size());
  auto nq = queries.size() / qdim;
  auto merge = [parts, nq, k] { return merge_top_k_results(*parts, nq, k); };
  track(self, fan_out<top_k_result>(
                all_shards(self),
                [=](size_t s, uint32_t attempt) {
                  if (ann)
                    return ask_shard(self, s, attempt, top_k_atom::value, name, queries, k, score,
                                     *ann);
                  return ask_shard(self, s, attempt, top_k_atom::value, name, queries, k, score);
                },
                [parts](size_t s, top_k_result& part) { (*parts)[s] = std::move(part); },
                deliver_with(promise, merge), retries(self)));
  return promise;
}

caf::result<full_logits_part> full_logits(embedding_master_pointer self, const std::string& name,
                                          const std::vector<float>& queries, uint64_t max_rows) {
  auto cfg = stores::find_embedding(self->state.configs, name);
  if (!cfg)
    return std::move(cfg.error());
  if (auto err = check_full_logits_request((*cfg)->dim, queries))
    return err;
  if (!self->state.diverged.empty())
    return diverged_error(self->state);
  auto promise = self->make_response_promise<full_logits_part>();
  auto parts = std::make_shared<std::vector<full_logits_part>>(self->state.options.shards.size());
  auto nq = queries.size() / (*cfg)->dim;
  track(self,
        fan_out<full_logits_part>(
          all_shards(self),
          [=](size_t s, uint32_t attempt) {
            return ask_shard(self, s, attempt, full_logits_atom::value, name, queries, max_rows);
          },
          [parts](size_t s, full_logits_part& part) { (*parts)[s] = std::move(part); },
          [promise, parts, nq, max_rows, name](caf::error err) mutable {
            if (err) {
              promise.deliver(std::move(err));
              return;
            }
            auto merged = merge_full_logits(*parts, nq);
            if (merged.keys.size() > max_rows)
              promise.deliver(make_error(errc::batch_too_large,
                                         "full_logits: '" + name + "' holds " +
                                           std::to_string(merged.keys.size()) +
                                           " rows, above max_rows " + std::to_string(max_rows)));
            else
              promise.deliver(std::move(merged));
          },
          retries(self)));
  return promise;
}

caf::result<std::vector<float>> full_backward(embedding_master_pointer self,
                                              const std::string& name,
                                              const std::vector<std::string>& keys,
                                              const std::vector<float>& queries,
                                              const std::vector<float>& dlogits, int64_t step) {
  auto cfg = stores::find_embedding(self->state.configs, name);
  if (!cfg)
    return std::move(cfg.error());
  auto dim = (*cfg)->dim;
  if (auto err = check_full_backward_request(dim, keys, queries, dlogits))
    return err;
  if (!self->state.diverged.empty())
    return diverged_error(self->state);
  // Each shard gets its keys and their columns of dlogits.
  auto shards = self->state.options.shards.size();
  auto nq = queries.size() / dim;
  std::vector<std::vector<size_t>> columns(shards);
  for (size_t k = 0; k < keys.size(); ++k)
    columns[compute::shard_of_key(keys[k], shards)].push_back(k);
  auto part_keys = std::make_shared<std::vector<std::vector<std::string>>>(shards);
  auto part_grads = std::make_shared<std::vector<std::vector<float>>>(shards);
  std::vector<size_t> involved;
  for (size_t s = 0; s < shards; ++s) {
    if (columns[s].empty())
      continue;
    involved.push_back(s);
    for (auto k : columns[s])
      (*part_keys)[s].push_back(keys[k]);
    auto& g = (*part_grads)[s];
    g.reserve(nq * columns[s].size());
    for (size_t b = 0; b < nq; ++b)
      for (auto k : columns[s])
        g.push_back(dlogits[b * keys.size() + k]);
  }
  auto promise = self->make_response_promise<std::vector<float>>();
  auto dq = std::make_shared<std::vector<float>>(queries.size(), 0.0f);
  auto id = new_request_id(self);
  track(self, fan_out<std::vector<float>>(
                involved,
                [=](size_t s, uint32_t attempt) {
                  return ask_shard(self, s, attempt, full_backward_atom::value, name,
                                   (*part_keys)[s], queries, (*part_grads)[s], step, id);
                },
                [dq](size_t, const std::vector<float>& part) {
                  for (size_t i = 0; i < part.size() && i < dq->size(); ++i)
                    (*dq)[i] += part[i];
                },
                deliver_with(promise, [dq] { return *dq; }), retries(self)));
  return promise;
}

caf::result<shard_route> route(embedding_master_pointer self) {
  auto& st = self->state;
  if (!st.options.shard_services.empty())
    return make_error(errc::unsupported,
                      "the service's shards are supervised: a replaced shard is refilled "
                      "before it serves, which only requests through the master wait for");
  shard_route result{st.options.shards, {}};
  for (auto& [name, cfg] : st.configs)
    result.configs.push_back(cfg);
  return result;
}

caf::result<embedding_stats> stats(embedding_master_pointer self, const std::string& name) {
  if (auto cfg = stores::find_embedding(self->state.configs, name); !cfg)
    return std::move(cfg.error());
  auto promise = self->make_response_promise<embedding_stats>();
  auto total = std::make_shared<embedding_stats>();
  track(self, fan_out<embedding_stats>(
                all_shards(self),
                [=](size_t s, uint32_t attempt) {
                  return ask_shard(self, s, attempt, stats_atom::value, name);
                },
                [total](size_t, const embedding_stats& part) {
                  total->rows += part.rows;
                  total->bytes += part.bytes;
                  total->raw_bytes += part.raw_bytes;
                  total->cached_rows += part.cached_rows;
                  total->cache_capacity += part.cache_capacity;
                  total->tier_hits += part.tier_hits;
                  total->tier_misses += part.tier_misses;
                  total->disk_reads += part.disk_reads;
                  total->prefetched_rows += part.prefetched_rows;
                  total->disk_bytes += part.disk_bytes;
                  total->evictions += part.evictions;
                  total->dropped_updates += part.dropped_updates;
                  total->ann_rows += part.ann_rows;
                  total->ann_backlog += part.ann_backlog;
                  total->ann_staleness_p99_s =
                    std::max(total->ann_staleness_p99_s, part.ann_staleness_p99_s);
                },
                deliver_with(promise,
                             [self, total] {
                               total->retried_requests = self->state.retries;
                               total->recovered_shards = self->state.recovered_shards;
                               return *total;
                             }),
                retries(self)));
  return promise;
}

} // namespace
} // namespace master

embedding_master_actor::behavior_type embedding_master(embedding_master_pointer self,
                                                       embedding_master_options options) {
  using namespace master;
  self->state.options = std::move(options);
  self->state.next_request_id = compute::mix64(
    compute::hash_key(to_string(self->node())),
    compute::mix64(self->id(), static_cast<uint64_t>(
                                 std::chrono::steady_clock::now().time_since_epoch().count())));
  if (!self->state.options.shard_services.empty()) {
    if (auto registry = self->system().registry().get<registry_actor>(registry_key))
      self->send(registry, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
  } else {
    // Nobody supervises these shards: their downs (or their nodes') come straight here.
    for (auto& shard : self->state.options.shards)
      self->monitor(shard);
    self->set_down_handler([self](caf::down_msg& msg) { on_shard_down(self, msg); });
  }
  return {
    [self](const cluster_event& event) { on_cluster_event(self, event); },
    [self](create_atom, de_config& cfg) { return create(self, std::move(cfg)); },
    [self](lookup_atom, const std::string& name, const std::vector<std::string>& keys) {
      return lookup(self, name, keys);
    },
    [self](update_atom, const std::string& name, const std::vector<std::string>& keys,
           const std::vector<float>& grads,
           int64_t step) { return update(self, name, keys, grads, step); },
    [self](lookup_atom, const std::vector<table_keys>& tables, bool keep) {
      return lookup_tables(self, tables, keep);
    },
    [self](backward_atom, uint64_t handle, const std::vector<shared_floats>& grads, int64_t step) {
      return backward(self, handle, grads, step);
    },
    [self](save_atom, const std::string& dir, int64_t step, const std::string& extra) {
      return save(self, dir, step, extra, 0);
    },
    [self](save_atom, const std::string& dir, int64_t step, const std::string& extra,
           uint32_t full_every) { return save(self, dir, step, extra, full_every); },
    [self](save_atom, const std::string& dir, int64_t step, const std::string& extra,
           uint32_t full_every, const std::string& unchanged_since) {
      return save(self, dir, step, extra, full_every, unchanged_since);
    },
    [self](restore_atom, const std::string& dir) { return restore(self, dir); },
    [self](sync_atom, const std::string& dir, const checkpoint_manifest& link) {
      return sync(self, dir, link);
    },
    [self](top_k_atom, const std::string& name, const std::vector<float>& queries, uint32_t k,
           top_k_score score) { return top_k(self, name, queries, k, score); },
    [self](top_k_atom, const std::string& name, const std::vector<float>& queries, uint32_t k,
           top_k_score score,
           const ann_query& ann) { return top_k(self, name, queries, k, score, ann); },
    [self](full_logits_atom, const std::string& name, const std::vector<float>& queries,
           uint64_t max_rows) { return full_logits(self, name, queries, max_rows); },
    [self](full_backward_atom, const std::string& name, const std::vector<std::string>& keys,
           const std::vector<float>& queries, const std::vector<float>& dlogits,
           int64_t step) { return full_backward(self, name, keys, queries, dlogits, step); },
    [self](stats_atom, const std::string& name) { return stats(self, name); },
    [self](route_atom) { return route(self); },
  };
}

} // namespace darcy::actors
