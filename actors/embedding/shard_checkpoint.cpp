#include "actors/embedding/shard_checkpoint.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "compute/placement.hpp"
#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"
#include "stores/embedding/chain_replay.hpp"
#include "stores/embedding/de_config.hpp"
#include "stores/embedding/embedding_part.hpp"

namespace darcy::actors {

/// A load of memory tables built aside (load_part), shared by the shard and its loader thread;
/// `result` is set before `done`.
struct embedding_shard_state::table_load {
  caf::expected<std::map<std::string, shard_table>> result =
    make_error(errc::io_error, "load: the checkpoint was not read");
  std::atomic<bool> done{false};
};

} // namespace darcy::actors

namespace darcy::actors::shard_checkpoint {

namespace {

// Writes table `t`'s part of checkpoint `id`: a delta holding the changes since `base` when its
// tracking covers them, else every row. With track_limit, tracking then goes on from `id`
// (kept for a retry of `base` should `id` not be committed). Without, the save is outside any
// chain (a training checkpoint beside a chain of syncs): every row, and the tracking for the
// chain, if any, goes on untouched.
caf::expected<file_info> save_table(shard_table& t, const std::string& dir, const std::string& rel,
                                    const std::string& id, const std::string& base,
                                    uint64_t track_limit) {
  if (track_limit == 0)
    return stores::write_shard_file(dir, rel, t.config, *t.store);
  stores::changed_keys taken;
  std::string taken_since = t.since;
  bool delta = false;
  if (t.tracked) {
    bool covered = !base.empty() && (t.since == base || t.previous_since == base);
    if (covered && t.since != base) {
      t.tracked->put_back(t.previous);
      taken_since = base;
    }
    taken = t.tracked->take();
    delta = covered && !taken.overflowed;
  }
  caf::expected<file_info> info = caf::error{};
  if (delta) {
    std::vector<std::string_view> keys(taken.keys.begin(), taken.keys.end());
    info = stores::write_delta_file(dir, rel, t.config, *t.store, keys);
  } else {
    info = stores::write_shard_file(dir, rel, t.config, *t.store);
  }
  if (!info) {
    if (t.tracked)
      t.tracked->put_back(taken);
    return info;
  }
  if (!t.tracked) {
    auto tracked = std::make_unique<stores::tracked_store>(std::move(t.store), track_limit);
    t.tracked = tracked.get();
    t.store = std::move(tracked);
    taken_since.clear();
  }
  t.previous_since = std::move(taken_since);
  t.previous = std::move(taken);
  t.since = id;
  return info;
}

} // namespace

caf::result<std::vector<checkpoint_embedding>> save_part(shard_pointer self, const std::string& dir,
                                                         const std::string& id, uint32_t index,
                                                         const std::string& base,
                                                         uint64_t track_limit) {
  auto key = dir + "/" + id;
  auto& saved = self->state.saved;
  for (auto& [done, answer] : saved)
    if (done == key)
      return answer;
  std::vector<checkpoint_embedding> result;
  for (auto& [name, table] : self->state.tables()) {
    auto rel = id + "/" + name + "/shard-" + std::to_string(index);
    auto info = save_table(table, dir, rel, id, base, track_limit);
    if (!info)
      return std::move(info.error());
    result.push_back({table.config, {*info}});
  }
  saved.emplace_back(key, result);
  if (saved.size() > 8)
    saved.pop_front();
  return result;
}

namespace {

/// Whether every table of `manifest` lives in memory on shard `index`.
bool in_memory(const checkpoint_manifest& manifest, uint32_t index) {
  return std::all_of(manifest.embeddings.begin(), manifest.embeddings.end(), [&](auto& entry) {
    return stores::shard_config(entry.config, index).backend == backend_kind::memory;
  });
}

/// Shard `index` of `count`'s tables after `manifest` (its chain replayed from its full
/// checkpoint). With `live`, a persistent table's database is rebuilt in place, so every file
/// is verified before it is removed from `live`; without (every table in memory), nothing is
/// touched but the tables answered, and each file is read once.
caf::expected<std::map<std::string, shard_table>> build_tables(
  const std::string& dir, const checkpoint_manifest& manifest, uint32_t index, uint32_t count,
  std::map<std::string, shard_table>* live) {
  std::vector<checkpoint_manifest> chain{manifest};
  if (!manifest.base.empty()) {
    auto read = stores::read_chain(stores::checkpoint_dir{dir}, manifest);
    if (!read)
      return std::move(read.error());
    chain = std::move(*read);
  }
  auto ignore = [](const stores::row_record&) { return caf::error{}; };
  if (live)
    for (auto& link : chain)
      for (auto& entry : link.embeddings)
        for (auto& file : entry.files)
          if (auto err = stores::read_shard_file(dir, file, entry.config, ignore))
            return err;
  std::map<std::string, shard_table> fresh;
  for (auto& entry : manifest.embeddings) {
    auto cfg = stores::shard_config(entry.config, index);
    if (cfg.backend != backend_kind::memory) {
      live->erase(entry.config.name);
      if (auto err = stores::remove_store_files(cfg, count))
        return err;
    }
    auto store = stores::make_store(cfg);
    if (!store)
      return std::move(store.error());
    auto import = [&](const stores::row_record& row) -> caf::error {
      if (compute::shard_of_key(row.key, count) != index)
        return {};
      return (*store)->import_row(row);
    };
    if (chain.size() > 1) {
      if (auto err = stores::replay_chain(dir, chain, entry.config.name, index, count, import))
        return err;
    } else {
      for (auto& file : entry.files)
        if (auto err = stores::read_shard_file(dir, file, entry.config, import))
          return err;
    }
    fresh.emplace(entry.config.name, shard_table{entry.config, std::move(*store)});
  }
  return fresh;
}

/// Swaps in the tables of load `request_id` and answers the request and its repeats; a load
/// that another began after it superseded is answered errc::unavailable and dropped.
void finish_load(shard_pointer self, uint64_t request_id) {
  auto at = self->state.loading.find(request_id);
  auto load = std::move(at->second.load);
  auto waiting = std::move(at->second.waiting);
  self->state.loading.erase(at);
  caf::error err;
  if (request_id != self->state.newest_load) {
    err = make_error(errc::unavailable,
                     "load of " + std::to_string(request_id) + ": a later load superseded it");
  } else if (load->result) {
    self->state.tables() = std::move(*load->result);
    self->state.applied.remember(request_id);
  } else {
    err = std::move(load->result.error());
  }
  for (auto& p : waiting)
    if (err)
      p.deliver(err);
    else
      p.deliver(ok_atom::value);
}

} // namespace

caf::result<ok_atom> load_part(shard_pointer self, const std::string& dir,
                               const checkpoint_manifest& manifest, uint32_t index, uint32_t count,
                               uint64_t request_id) {
  if (self->state.applied.seen(request_id))
    return ok_atom::value;
  auto at = self->state.loading.find(request_id);
  if (count == 0 && at != self->state.loading.end() && at->second.load->done.load()) {
    finish_load(self, request_id); // the loader's notice
    return ok_atom::value;
  }
  if (count == 0 || index >= count)
    return make_error(errc::invalid_argument,
                      "shard " + std::to_string(index) + " of " + std::to_string(count));
  if (at == self->state.loading.end())
    self->state.newest_load = request_id;
  if (!in_memory(manifest, index)) {
    auto fresh = build_tables(dir, manifest, index, count, &self->state.tables());
    if (!fresh)
      return std::move(fresh.error());
    self->state.tables() = std::move(*fresh);
    self->state.applied.remember(request_id);
    return ok_atom::value;
  }
  auto promise = self->make_response_promise<ok_atom>();
  if (at != self->state.loading.end()) { // a repeat: the first one's answer
    at->second.waiting.push_back(promise);
    return promise;
  }
  // Seconds of reading must not hold the shard's scheduler thread: on a node of one thread,
  // that would starve its heartbeats until the cluster declares it down. The loader gets no
  // request: once done it sends the load again, anonymously, with a shard count of 0.
  auto load = std::make_shared<embedding_shard_state::table_load>();
  self->state.loading[request_id] = {load, {promise}};
  auto loader =
    self->spawn<caf::detached>([load, dir, manifest, index, count, request_id,
                                shard = caf::actor_cast<embedding_shard_actor>(self)](
                                 caf::event_based_actor* helper) mutable -> caf::behavior {
      return {[helper, load = std::move(load), dir, manifest, index, count, request_id,
               shard = std::move(shard)](load_atom) mutable {
        // The shard waits for this notice: whatever happens here must end in one.
        try {
          load->result = build_tables(dir, manifest, index, count, nullptr);
        } catch (const std::exception& e) {
          load->result =
            make_error(errc::io_error, "load of " + manifest.checkpoint + ": " + e.what());
        }
        load->done = true;
        load.reset();
        caf::anon_send(shard, load_part_atom::value, dir, manifest, index, uint32_t{0}, request_id);
        shard = nullptr;
        helper->quit();
      }};
    });
  caf::anon_send(loader, load_atom::value);
  return promise;
}

} // namespace darcy::actors::shard_checkpoint
