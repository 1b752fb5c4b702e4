#include "actors/embedding/master_checkpoint.hpp"

#include <map>

#include "actors/checkpoint_coordinator.hpp"
#include "actors/embedding/master_queue.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::actors::master {

void place_table(const embedding_master_options& o, de_config& cfg) {
  if (!o.tables_in_memory)
    return;
  cfg.backend = backend_kind::memory;
  cfg.path.clear();
}

namespace {

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

} // namespace

caf::result<checkpoint_manifest> save(embedding_master_pointer self, const std::string& dir,
                                      int64_t step, const std::string& extra, uint32_t full_every,
                                      const std::string& unchanged_since) {
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
                      } else if (manifest && dir == st.chain_dir) {
                        st.chain_dir.clear();
                        st.chain_head.clear();
                      }
                      done(std::move(manifest));
                    },
                    file_retries(self)));
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

/// `m`'s tables as this service's shards hold them (place_table).
void place_tables(const embedding_master_options& o, checkpoint_manifest& m) {
  for (auto& entry : m.embeddings)
    place_table(o, entry.config);
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
    place_tables(self->state.options, *shared);
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
                  file_retries(self)));
  });
  // The promise owns the response now: an error returned instead would never reach the caller.
  if (err)
    promise.deliver(std::move(err));
  return promise;
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
  place_tables(self->state.options, *shared);
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
                  file_retries(self)));
  });
  if (err)
    promise.deliver(std::move(err));
  return promise;
}

} // namespace darcy::actors::master
