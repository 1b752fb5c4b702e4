#include "actors/embedding/direct_embedding.hpp"

#include <deque>

#include "messages/error.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::actors {

direct_embedding::direct_embedding(std::vector<shard_tables_ptr> shards)
  : shards_(std::move(shards)) {
}

config_finder direct_embedding::configs() const {
  // Copies, taken under shard 0's lock: a restore may replace the tables meanwhile.
  auto copies = std::make_shared<std::deque<de_config>>();
  return [this, copies](const std::string& name) -> caf::expected<const de_config*> {
    if (shards_.empty())
      return make_error(errc::unknown_embedding, "embedding '" + name + "' (no shards)");
    auto& first = *shards_.front();
    std::lock_guard<std::mutex> guard{first.mutex};
    auto table = stores::find_embedding(first.tables, name);
    if (!table)
      return std::move(table.error());
    return &copies->emplace_back((*table)->config);
  };
}

caf::expected<std::shared_ptr<const routed_batch>> direct_embedding::lookup(
  const std::vector<table_keys>& tables, const std::vector<std::span<float>>& out) const {
  auto dims = checked_dims(tables, configs(), out);
  if (!dims)
    return std::move(dims.error());
  auto route = std::make_shared<routed_batch>(tables, *dims, shards_.size());
  for (auto s : route->shards()) {
    auto& shard = *shards_[s];
    std::vector<shared_floats> rows;
    {
      std::lock_guard<std::mutex> guard{shard.mutex};
      for (auto& part : route->part(s)) {
        auto table = stores::find_embedding(shard.tables, part.name);
        if (!table)
          return std::move(table.error());
        auto& store = *(*table)->store;
        // The store writes every row, so the buffer starts uninitialised.
        auto [part_rows, part_out] = shared_floats::allocate(part.keys.size() * store.dim());
        if (!part.keys.empty())
          if (auto err = store.lookup(part.keys.views(), part.keys.hashes(), part_out))
            return err;
        rows.push_back(std::move(part_rows));
      }
    }
    if (auto err = route->scatter(s, rows, out))
      return err;
  }
  return std::shared_ptr<const routed_batch>{std::move(route)};
}

caf::error direct_embedding::update(const routed_batch& route,
                                    const std::vector<std::span<const float>>& grads,
                                    int64_t step) const {
  if (auto err = check_routed_gradients(route, grads, configs()))
    return err;
  for (auto s : route.shards()) {
    auto sums = route.gather(s, grads);
    auto& shard = *shards_[s];
    std::lock_guard<std::mutex> guard{shard.mutex};
    for (size_t t = 0; t < route.tables(); ++t) {
      auto& keys = route.part(s)[t].keys;
      if (keys.empty())
        continue;
      auto table = stores::find_embedding(shard.tables, route.name(t));
      if (!table)
        return std::move(table.error());
      if (auto err = (*table)->store->update(keys.views(), keys.hashes(), sums[t].values(), step))
        return err;
    }
  }
  return {};
}

} // namespace darcy::actors
