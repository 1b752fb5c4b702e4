#include "actors/embedding/shard_checkpoint.hpp"

#include <map>

#include "compute/placement.hpp"
#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"
#include "stores/embedding/chain_replay.hpp"
#include "stores/embedding/de_config.hpp"
#include "stores/embedding/embedding_part.hpp"

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

caf::result<ok_atom> load_part(shard_pointer self, const std::string& dir,
                               const checkpoint_manifest& manifest, uint32_t index, uint32_t count,
                               uint64_t request_id) {
  if (count == 0 || index >= count)
    return make_error(errc::invalid_argument,
                      "shard " + std::to_string(index) + " of " + std::to_string(count));
  if (self->state.applied.seen(request_id))
    return ok_atom::value;
  // An incremental checkpoint is replayed from its chain's full checkpoint.
  std::vector<checkpoint_manifest> chain{manifest};
  if (!manifest.base.empty()) {
    auto read = stores::read_chain(stores::checkpoint_dir{dir}, manifest);
    if (!read)
      return std::move(read.error());
    chain = std::move(*read);
  }
  auto ignore = [](const stores::row_record&) { return caf::error{}; };
  for (auto& link : chain)
    for (auto& entry : link.embeddings)
      for (auto& file : entry.files)
        if (auto err = stores::read_shard_file(dir, file, entry.config, ignore))
          return err;
  std::map<std::string, embedding_shard_state::table> fresh;
  for (auto& entry : manifest.embeddings) {
    auto cfg = stores::shard_config(entry.config, index);
    if (cfg.backend != backend_kind::memory) {
      self->state.tables().erase(entry.config.name);
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
    fresh.emplace(entry.config.name, embedding_shard_state::table{entry.config, std::move(*store)});
  }
  self->state.tables() = std::move(fresh);
  self->state.applied.remember(request_id);
  return ok_atom::value;
}

} // namespace darcy::actors::shard_checkpoint
