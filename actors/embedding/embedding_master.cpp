#include "actors/embedding/embedding_master.hpp"

#include <memory>
#include <numeric>
#include <unordered_map>

#include "actors/checkpoint_coordinator.hpp"
#include "actors/embedding/key_routing.hpp"
#include "actors/embedding/top_k_scan.hpp"
#include "actors/fan_out.hpp"
#include "compute/hash.hpp"
#include "compute/placement.hpp"
#include "messages/cluster/cluster_interfaces.hpp"
#include "messages/error.hpp"
#include "runtime/log.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::actors {

namespace {

const embedding_shard_actor& shard(embedding_master_pointer self, size_t s) {
  return self->state.options.shards[s];
}

// Sends xs to shard s as attempt `attempt` (0 first): its timeout doubles with each attempt,
// up to shard_timeout.
template <class... Ts>
auto ask_shard(embedding_master_pointer self, size_t s, uint32_t attempt, Ts&&... xs) {
  auto& opts = self->state.options;
  auto timeout = opts.attempt_timeout * (int64_t{1} << std::min<uint32_t>(attempt, 20));
  auto wait = opts.shards_may_lose_messages ? caf::duration{std::min(timeout, opts.shard_timeout)}
                                            : caf::duration{caf::infinite};
  return self->request(shard(self, s), wait, std::forward<Ts>(xs)...);
}

retry_policy retries(embedding_master_pointer self) {
  return {std::max<uint32_t>(self->state.options.attempts, 1), [self] { ++self->state.retries; }};
}

uint64_t new_request_id(embedding_master_pointer self) {
  auto id = self->state.next_request_id++;
  return id == 0 ? self->state.next_request_id++ : id;
}

// The error every state-touching request gets while the shards hold rows of different times.
caf::error diverged_error(const embedding_master_state& st) {
  return make_error(errc::node_unreachable, st.diverged);
}

// Runs `work` now if an in-flight slot is free, queues it otherwise, or refuses it.
template <class Promise>
void admit(embedding_master_pointer self, Promise promise, std::function<void()> work) {
  auto& st = self->state;
  if (!st.diverged.empty()) {
    promise.deliver(diverged_error(st));
  } else if (!st.exclusive && st.down.empty() && st.in_flight < st.options.max_in_flight) {
    ++st.in_flight;
    work();
  } else if (st.queued.size() < st.options.max_queued) {
    st.queued.push_back(
      {std::move(work), [promise](caf::error err) mutable { promise.deliver(std::move(err)); }});
  } else {
    promise.deliver(
      make_error(errc::overloaded, std::to_string(st.in_flight) + " requests in flight"));
  }
}

// Starts queued fan-outs while in-flight slots are free; refuses them all while diverged.
void start_queued(embedding_master_pointer self) {
  auto& st = self->state;
  while (!st.diverged.empty() && !st.queued.empty()) {
    auto next = std::move(st.queued.front());
    st.queued.pop_front();
    next.refuse(diverged_error(st));
  }
  while (!st.exclusive && st.down.empty() && st.in_flight < st.options.max_in_flight &&
         !st.queued.empty()) {
    auto next = std::move(st.queued.front());
    st.queued.pop_front();
    ++st.in_flight;
    next.run();
  }
}

// Marks one fan-out done; runs the pending exclusive work once nothing is in flight.
void finished(embedding_master_pointer self) {
  auto& st = self->state;
  --st.in_flight;
  if (st.exclusive && st.in_flight == 0 && st.on_drained) {
    auto work = std::move(st.on_drained);
    st.on_drained = nullptr;
    work();
    return;
  }
  start_queued(self);
}

// Holds back new requests, waits for those in flight, then runs `work`, which must call
// end_exclusive when it is done. The caller must have checked that nothing exclusive runs.
void run_exclusive(embedding_master_pointer self, std::function<void()> work) {
  auto& st = self->state;
  st.exclusive = true;
  if (st.in_flight == 0)
    work();
  else
    st.on_drained = std::move(work);
}

// Runs a save or restore as exclusive work: now, or when the exclusive work before it has
// ended and every lost shard is back and refilled. errc::overloaded when max_queued of them
// already wait.
caf::error begin_exclusive(embedding_master_pointer self, std::function<void()> work) {
  auto& st = self->state;
  if (!st.exclusive && st.down.empty()) {
    run_exclusive(self, std::move(work));
    return {};
  }
  if (st.exclusive_waiting.size() >= st.options.max_queued)
    return make_error(errc::overloaded, std::to_string(st.exclusive_waiting.size()) +
                                          " checkpoint saves and restores waiting");
  st.exclusive_waiting.push_back(std::move(work));
  return {};
}

void recover_pending(embedding_master_pointer self);

// Ends the running exclusive work: lost shards are refilled first, then the next waiting save
// or restore runs, then the requests queued meanwhile.
void end_exclusive(embedding_master_pointer self) {
  auto& st = self->state;
  st.exclusive = false;
  if (!st.to_recover.empty()) {
    recover_pending(self);
  } else if (st.down.empty() && !st.exclusive_waiting.empty()) {
    auto work = std::move(st.exclusive_waiting.front());
    st.exclusive_waiting.pop_front();
    run_exclusive(self, std::move(work));
  } else {
    start_queued(self);
  }
}

// Remembers a running fan-out (and forgets finished ones).
void track(embedding_master_pointer self, std::shared_ptr<fan_out_state> state) {
  auto& list = self->state.fan_outs;
  std::erase_if(list, [](const std::weak_ptr<fan_out_state>& w) {
    auto s = w.lock();
    return !s || s->finished();
  });
  if (!state->finished())
    list.push_back(state);
}

std::vector<size_t> all_shards(embedding_master_pointer self) {
  std::vector<size_t> result(self->state.options.shards.size());
  std::iota(result.begin(), result.end(), 0);
  return result;
}

// Delivers `value` on success and the error otherwise.
template <class Promise, class Value>
std::function<void(caf::error)> deliver_with(Promise promise, Value value) {
  return [promise, value](caf::error err) mutable {
    if (err)
      promise.deliver(std::move(err));
    else
      promise.deliver(value());
  };
}

// Recovers one pending shard, unless a save, restore or recovery already runs (end_exclusive
// calls back here). A shard that came back as a new actor gets every table again and the rows
// of the last checkpoint, when there is one, before it serves; requests wait meanwhile.
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
        [](size_t, ok_atom) {}, done, retries(self));
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

// One manifest entry per embedding, its files in shard order.
checkpoint_manifest assemble_manifest(const std::vector<std::vector<checkpoint_embedding>>& parts,
                                      int64_t step, const std::string& extra, size_t shards) {
  checkpoint_manifest manifest;
  manifest.service = embedding_service_name;
  manifest.step = step;
  manifest.extra = extra;
  manifest.shard_count = static_cast<uint32_t>(shards);
  std::map<std::string, checkpoint_embedding> by_name;
  for (auto& part : parts)
    for (auto& entry : part) {
      auto& merged = by_name[entry.config.name];
      merged.config = entry.config;
      merged.files.insert(merged.files.end(), entry.files.begin(), entry.files.end());
    }
  for (auto& [name, entry] : by_name)
    manifest.embeddings.push_back(std::move(entry));
  return manifest;
}

// A shard's service went down or came back (supervised shards only).
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

caf::result<ok_atom> create(embedding_master_pointer self, const de_config& cfg) {
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

// One consistent checkpoint: new requests wait while the shards write their parts.
// With `unchanged_since` the caller vouches that the tables hold exactly that checkpoint of
// `dir` (restored from it, nothing trained since): when it is still the newest there, a new
// chain starts with a full checkpoint that names it (same_as), so that copies holding it go on.
caf::result<checkpoint_manifest> save(embedding_master_pointer self, const std::string& dir,
                                      int64_t step, const std::string& extra, uint32_t full_every,
                                      const std::string& unchanged_since = {}) {
  if (!self->state.diverged.empty())
    return diverged_error(self->state);
  auto promise = self->make_response_promise<checkpoint_manifest>();
  auto err = begin_exclusive(self, [=]() mutable {
    // A shard refilled while this save waited its turn leaves nothing consistent to save.
    if (!self->state.diverged.empty()) {
      promise.deliver(diverged_error(self->state));
      end_exclusive(self);
      return;
    }
    auto count = self->state.options.shards.size();
    // A delta when the root's current checkpoint is the head of this master's chain there,
    // with fewer than full_every deltas on its full checkpoint.
    auto& st = self->state;
    bool ours = false;
    bool at_current = false;
    if (full_every > 0)
      if (auto current = stores::checkpoint_dir{dir}.read_manifest(); current) {
        ours = st.chain_dir == dir && current->checkpoint == st.chain_head &&
               current->shard_count == count;
        at_current = !unchanged_since.empty() && current->checkpoint == unchanged_since;
      }
    uint64_t track_limit = full_every > 0 ? st.options.max_tracked_keys : 0;
    // Takes one checkpoint on `base` (empty: a full one), then runs `done` with its manifest.
    using done_fn = std::function<void(caf::expected<checkpoint_manifest>)>;
    auto take = [=](std::string base, std::string same_as, done_fn done) {
      auto id = stores::checkpoint_dir::new_id(std::to_string(step));
      // A full checkpoint that follows its chain's last delta keeps that chain too, so that a
      // copy one link behind can still take that delta.
      size_t keep = same_as.empty() ? 1 : 2;
      track(self, take_checkpoint_as<std::vector<checkpoint_embedding>>(
                    stores::checkpoint_dir{dir}, id, keep, count,
                    [=](size_t s, const std::string& part_id, uint32_t attempt) {
                      return ask_shard(self, s, attempt, save_part_atom::value, dir, part_id,
                                       static_cast<uint32_t>(s), base, track_limit);
                    },
                    [=](std::vector<std::vector<checkpoint_embedding>>& parts) {
                      auto manifest = assemble_manifest(parts, step, extra, count);
                      manifest.base = base;
                      manifest.same_as = same_as;
                      return manifest;
                    },
                    [=](caf::expected<checkpoint_manifest> manifest) mutable {
                      auto& st = self->state;
                      if (manifest && full_every > 0) {
                        st.chain_deltas = base.empty() ? 0 : st.chain_deltas + 1;
                        st.chain_dir = dir;
                        st.chain_head = id;
                      } else if (manifest) {
                        st.chain_dir.clear();
                        st.chain_head.clear();
                      }
                      done(std::move(manifest));
                    },
                    retries(self)));
    };
    auto finish = [=](caf::expected<checkpoint_manifest> manifest) mutable {
      if (manifest && dir == self->state.options.checkpoint_dir)
        self->state.updates_since_checkpoint = 0;
      end_exclusive(self);
      if (manifest)
        promise.deliver(std::move(*manifest));
      else
        promise.deliver(std::move(manifest.error()));
    };
    if (ours && st.chain_deltas < full_every) {
      take(st.chain_head, "", finish);
    } else if (ours) {
      // A new chain: first the last delta of this one, for the copies that follow it, then
      // the full checkpoint at the same state, which those copies then hold already.
      take(st.chain_head, "", [=](caf::expected<checkpoint_manifest> delta) mutable {
        if (!delta)
          return finish(std::move(delta));
        take("", delta->checkpoint, finish);
      });
    } else {
      take("", at_current ? unchanged_since : std::string{}, finish);
    }
  });
  // The promise owns the response now: an error returned instead would never reach the caller.
  if (err)
    promise.deliver(std::move(err));
  return promise;
}

// The newest checkpoint in `dir`, if it is one of this service with valid configs.
caf::expected<checkpoint_manifest> restorable_manifest(const std::string& dir) {
  auto manifest = stores::checkpoint_dir{dir}.read_manifest();
  if (!manifest)
    return std::move(manifest.error());
  if (manifest->service != embedding_service_name)
    return make_error(errc::corrupt_file,
                      dir + ": holds a checkpoint of the '" + manifest->service + "' service");
  for (auto& entry : manifest->embeddings)
    if (auto err = stores::validate(entry.config))
      return make_error(errc::corrupt_file, dir + ": " + render(err));
  if (auto chain = stores::read_chain(stores::checkpoint_dir{dir}, *manifest); !chain)
    return std::move(chain.error());
  return manifest;
}

caf::result<checkpoint_manifest> restore(embedding_master_pointer self, const std::string& dir) {
  if (auto checked = restorable_manifest(dir); !checked)
    return std::move(checked.error());
  auto promise = self->make_response_promise<checkpoint_manifest>();
  auto err = begin_exclusive(self, [=]() mutable {
    // Read again: a save that ran while this restore waited its turn has replaced the newest
    // checkpoint, and the files of the one read on arrival may be gone.
    auto manifest = restorable_manifest(dir);
    if (!manifest) {
      promise.deliver(std::move(manifest.error()));
      end_exclusive(self);
      return;
    }
    auto shared = std::make_shared<checkpoint_manifest>(std::move(*manifest));
    auto count = static_cast<uint32_t>(self->state.options.shards.size());
    auto id = new_request_id(self);
    // The shards' tables start afresh, untracked: the next incremental save is a full one.
    self->state.chain_head.clear();
    track(self, fan_out<ok_atom>(
                  all_shards(self),
                  [=](size_t s, uint32_t attempt) {
                    return ask_shard(self, s, attempt, load_part_atom::value, dir, *shared,
                                     static_cast<uint32_t>(s), count, id);
                  },
                  [](size_t, ok_atom) {},
                  [=](caf::error err) mutable {
                    if (!err) {
                      auto& st = self->state;
                      st.configs.clear();
                      for (auto& entry : shared->embeddings)
                        st.configs[entry.config.name] = entry.config;
                      // Every shard now holds this checkpoint's rows; they match
                      // options.checkpoint_dir's only when that is where they came from.
                      st.diverged.clear();
                      st.updates_since_checkpoint = dir == st.options.checkpoint_dir ? 0 : 1;
                      st.applied_head = shared->checkpoint;
                    }
                    end_exclusive(self);
                    if (err)
                      promise.deliver(std::move(err));
                    else
                      promise.deliver(*shared);
                  },
                  retries(self)));
  });
  // The promise owns the response now: an error returned instead would never reach the caller.
  if (err)
    promise.deliver(std::move(err));
  return promise;
}

// Whether a link on `base` applies to tables that hold `held`: its base, or a full
// checkpoint under `dir` taken at that state (checkpoint_manifest::same_as).
bool applies_on(const std::string& dir, const std::string& base, const std::string& held) {
  if (base.empty() || held.empty())
    return false;
  if (base == held)
    return true;
  auto start = stores::checkpoint_dir{dir}.read_manifest_of(base);
  return start && start->same_as == held;
}

caf::result<ok_atom> sync(embedding_master_pointer self, const std::string& dir,
                          const checkpoint_manifest& link) {
  auto& st = self->state;
  if (!applies_on(dir, link.base, st.applied_head))
    return make_error(
      errc::invalid_argument,
      "sync " + link.checkpoint + " applies on " +
        (link.base.empty() ? std::string{"nothing (a full checkpoint)"} : link.base) +
        ", but the service holds " +
        (st.applied_head.empty() ? std::string{"no checkpoint"} : st.applied_head) +
        ": restore the chain instead");
  for (auto& entry : link.embeddings)
    if (auto err = stores::validate(entry.config))
      return make_error(errc::corrupt_file, dir + ": " + render(err));
  auto promise = self->make_response_promise<ok_atom>();
  auto shared = std::make_shared<checkpoint_manifest>(link);
  auto err = begin_exclusive(self, [=]() mutable {
    if (!applies_on(dir, shared->base, self->state.applied_head)) {
      promise.deliver(make_error(errc::invalid_argument, "sync " + shared->checkpoint +
                                                           ": another sync or a restore "
                                                           "ran first"));
      end_exclusive(self);
      return;
    }
    auto count = static_cast<uint32_t>(self->state.options.shards.size());
    auto id = new_request_id(self);
    track(self, fan_out<ok_atom>(
                  all_shards(self),
                  [=](size_t s, uint32_t attempt) {
                    return ask_shard(self, s, attempt, apply_part_atom::value, dir, *shared,
                                     static_cast<uint32_t>(s), count, id);
                  },
                  [](size_t, ok_atom) {},
                  [=](caf::error err) mutable {
                    auto& st = self->state;
                    if (!err) {
                      for (auto& entry : shared->embeddings)
                        st.configs[entry.config.name] = entry.config;
                      st.applied_head = shared->checkpoint;
                    } else {
                      // Some shards may hold the sync and others not: only a restore of the
                      // chain makes the tables one time again.
                      st.applied_head.clear();
                    }
                    end_exclusive(self);
                    if (err)
                      promise.deliver(std::move(err));
                    else
                      promise.deliver(ok_atom::value);
                  },
                  retries(self)));
  });
  if (err)
    promise.deliver(std::move(err));
  return promise;
}

caf::result<top_k_result> top_k(embedding_master_pointer self, const std::string& name,
                                const std::vector<float>& queries, uint32_t k, top_k_score score) {
  auto cfg = stores::find_embedding(self->state.configs, name);
  if (!cfg)
    return std::move(cfg.error());
  if (auto err = check_top_k_request((*cfg)->dim, queries.size(), k, score))
    return err;
  if (!self->state.diverged.empty())
    return diverged_error(self->state);
  auto qdim = (*cfg)->dim - (score == top_k_score::inner_product_bias ? 1u : 0u);
  auto promise = self->make_response_promise<top_k_result>();
  auto parts = std::make_shared<std::vector<top_k_result>>(self->state.options.shards.size());
  auto nq = queries.size() / qdim;
  track(self,
        fan_out<top_k_result>(
          all_shards(self),
          [=](size_t s, uint32_t attempt) {
            return ask_shard(self, s, attempt, top_k_atom::value, name, queries, k, score);
          },
          [parts](size_t s, top_k_result& part) { (*parts)[s] = std::move(part); },
          deliver_with(promise, [parts, nq, k] { return merge_top_k_results(*parts, nq, k); }),
          retries(self)));
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
                  total->disk_bytes += part.disk_bytes;
                  total->evictions += part.evictions;
                  total->dropped_updates += part.dropped_updates;
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

embedding_master_actor::behavior_type embedding_master(embedding_master_pointer self,
                                                       embedding_master_options options) {
  self->state.options = std::move(options);
  self->state.next_request_id = compute::mix64(
    compute::hash_key(to_string(self->node())),
    compute::mix64(self->id(), static_cast<uint64_t>(
                                 std::chrono::steady_clock::now().time_since_epoch().count())));
  if (!self->state.options.shard_services.empty())
    if (auto registry = self->system().registry().get<registry_actor>(registry_key))
      self->send(registry, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
  return {
    [self](const cluster_event& event) { on_cluster_event(self, event); },
    [self](create_atom, const de_config& cfg) { return create(self, cfg); },
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
    [self](stats_atom, const std::string& name) { return stats(self, name); },
    [self](route_atom) { return route(self); },
  };
}

} // namespace darcy::actors
