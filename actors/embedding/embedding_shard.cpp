#include "actors/embedding/embedding_shard.hpp"

#include <algorithm>
#include <filesystem>

#include "actors/embedding/top_k_scan.hpp"
#include "compute/placement.hpp"
#include "messages/error.hpp"
#include "stores/checkpoint_io.hpp"
#include "stores/de_config.hpp"

namespace darcy::actors {

namespace {

using shard_pointer = embedding_shard_actor::stateful_pointer<embedding_shard_state>;

// The table of `name` after checking the batch; an error when either is wrong.
caf::expected<embedding_shard_state::table*> checked_table(shard_pointer self,
                                                           const std::string& name,
                                                           size_t batch) {
  auto i = self->state.tables.find(name);
  if (i == self->state.tables.end())
    return make_error(errc::unknown_embedding, name);
  if (auto err = stores::check_batch(i->second.config, batch))
    return err;
  return &i->second;
}

std::vector<std::string_view> views(const std::vector<std::string>& keys) {
  return {keys.begin(), keys.end()};
}

} // namespace

de_config shard_config(const de_config& cfg, uint32_t index) {
  auto result = cfg;
  if (cfg.backend == backend_kind::leveldb)
    result.path = (std::filesystem::path{cfg.path} / ("shard-" + std::to_string(index))).string();
  return result;
}

std::vector<embedding_shard_actor> spawn_shards(caf::actor_system& sys, size_t count) {
  std::vector<embedding_shard_actor> result;
  for (size_t i = 0; i < count; ++i)
    result.push_back(sys.spawn(embedding_shard, static_cast<uint32_t>(i)));
  return result;
}

embedding_shard_actor::behavior_type embedding_shard(shard_pointer self, uint32_t index) {
  self->state.index = index;
  return {
    [self](create_atom, de_config& cfg) -> caf::result<ok_atom> {
      auto& tables = self->state.tables;
      if (auto i = tables.find(cfg.name); i != tables.end()) {
        if (i->second.config.dim != cfg.dim)
          return make_error(errc::invalid_config, "embedding '" + cfg.name +
                                                    "' exists with dim " +
                                                    std::to_string(i->second.config.dim));
        return ok_atom::value;
      }
      auto store = stores::make_store(shard_config(cfg, self->state.index));
      if (!store)
        return std::move(store.error());
      auto name = cfg.name;
      tables.emplace(name, embedding_shard_state::table{std::move(cfg), std::move(*store)});
      return ok_atom::value;
    },
    [self](lookup_atom, const std::string& name,
           const std::vector<std::string>& keys) -> caf::result<std::vector<float>> {
      auto table = checked_table(self, name, keys.size());
      if (!table)
        return std::move(table.error());
      auto& store = *(*table)->store;
      std::vector<float> out(keys.size() * store.dim());
      auto key_views = views(keys);
      if (auto err = store.lookup(key_views, out))
        return err;
      return out;
    },
    [self](update_atom, const std::string& name, const std::vector<std::string>& keys,
           const std::vector<float>& grads, int64_t step) -> caf::result<ok_atom> {
      auto table = checked_table(self, name, keys.size());
      if (!table)
        return std::move(table.error());
      auto key_views = views(keys);
      if (auto err = (*table)->store->update(key_views, grads, step))
        return err;
      return ok_atom::value;
    },
    [self](top_k_atom, const std::string& name, const std::vector<float>& queries, uint32_t k,
           bool with_bias) -> caf::result<top_k_result> {
      auto i = self->state.tables.find(name);
      if (i == self->state.tables.end())
        return make_error(errc::unknown_embedding, name);
      auto result = scan_top_k(*i->second.store, queries, k, with_bias);
      if (!result)
        return std::move(result.error());
      return std::move(*result);
    },
    [self](sample_stats_atom, const std::string& name,
           const std::vector<std::string>& positives) -> caf::result<sample_stats> {
      auto i = self->state.tables.find(name);
      if (i == self->state.tables.end())
        return make_error(errc::unknown_embedding, name);
      return i->second.store->sample_metadata(positives);
    },
    [self](sample_part_atom, const std::string& name,
           const sample_plan& plan) -> caf::result<sample_result> {
      auto i = self->state.tables.find(name);
      if (i == self->state.tables.end())
        return make_error(errc::unknown_embedding, name);
      auto result = i->second.store->sample(plan);
      if (!result)
        return std::move(result.error());
      return std::move(*result);
    },
    [self](save_part_atom, const std::string& dir, const std::string& id,
           uint32_t index) -> caf::result<std::vector<checkpoint_embedding>> {
      std::vector<checkpoint_embedding> result;
      for (auto& [name, table] : self->state.tables) {
        auto rel = id + "/" + name + "/shard-" + std::to_string(index);
        auto info = stores::write_shard_file(dir, rel, table.config, *table.store);
        if (!info)
          return std::move(info.error());
        result.push_back({table.config, {*info}});
      }
      return result;
    },
    [self](load_part_atom, const std::string& dir, const checkpoint_manifest& manifest,
           uint32_t index, uint32_t count) -> caf::result<ok_atom> {
      if (count == 0 || index >= count)
        return make_error(errc::invalid_argument, "shard " + std::to_string(index) + " of " +
                                                    std::to_string(count));
      // Every file is verified first, so a damaged checkpoint changes nothing. Memory tables
      // are then built aside and swapped in whole; a persistent table is rebuilt in place
      // (its database cannot be opened twice).
      auto ignore = [](const stores::row_record&) { return caf::error{}; };
      for (auto& entry : manifest.embeddings)
        for (auto& file : entry.files)
          if (auto err = stores::read_shard_file(dir, file, entry.config, ignore))
            return err;
      std::map<std::string, embedding_shard_state::table> fresh;
      for (auto& entry : manifest.embeddings) {
        auto cfg = shard_config(entry.config, index);
        if (cfg.backend == backend_kind::leveldb) {
          self->state.tables.erase(entry.config.name);
          std::error_code ec;
          std::filesystem::remove_all(cfg.path, ec);
        }
        auto store = stores::make_store(cfg);
        if (!store)
          return std::move(store.error());
        for (auto& file : entry.files) {
          auto err = stores::read_shard_file(dir, file, entry.config,
                                             [&](const stores::row_record& row) -> caf::error {
                                               if (compute::shard_of_key(row.key, count) != index)
                                                 return {};
                                               return (*store)->import_row(row);
                                             });
          if (err)
            return err;
        }
        fresh.emplace(entry.config.name,
                      embedding_shard_state::table{entry.config, std::move(*store)});
      }
      self->state.tables = std::move(fresh);
      return ok_atom::value;
    },
    [self](stats_atom, const std::string& name) -> caf::result<embedding_stats> {
      auto i = self->state.tables.find(name);
      if (i == self->state.tables.end())
        return make_error(errc::unknown_embedding, name);
      return i->second.store->stats();
    },
  };
}

} // namespace darcy::actors
