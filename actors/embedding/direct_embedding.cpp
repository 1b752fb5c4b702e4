#include "actors/embedding/direct_embedding.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <thread>

#include "actors/embedding/staged_rows.hpp"
#include "actors/embedding/top_k_scan.hpp"
#include "messages/error.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::actors {

namespace {

/// Below this many keys a request's shards run one after another in the caller's thread: a
/// thread of their own costs more than their work.
constexpr size_t parallel_keys = 1024;

size_t keys_of(const routed_batch& route) {
  size_t keys = 0;
  for (size_t t = 0; t < route.tables(); ++t)
    keys += route.keys(t);
  return keys;
}

/// Calls f(s) for every shard s of `route` on `threads` threads (the caller's among them); each
/// shard is visited by one thread, the next shard going to whichever thread is free first (a
/// shard's work varies with its keys and its store's misses, and a helper starts late). Answers
/// the first error in shard order.
template <class F>
caf::error for_each_shard(const routed_batch& route, size_t threads, F f) {
  auto& shards = route.shards();
  threads = std::clamp<size_t>(threads, 1, std::max<size_t>(1, shards.size()));
  std::vector<caf::error> errors(shards.size());
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (auto i = next.fetch_add(1); i < shards.size(); i = next.fetch_add(1))
      errors[i] = f(shards[i]);
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t)
    helpers.emplace_back(run);
  run();
  for (auto& helper : helpers)
    helper.join();
  for (auto& err : errors)
    if (err)
      return std::move(err);
  return {};
}

} // namespace

direct_embedding::direct_embedding(std::vector<shard_tables_ptr> shards)
  : shards_(std::move(shards)), cores_(std::max(1u, std::thread::hardware_concurrency())) {
}

size_t direct_embedding::threads_for(const routed_batch& route) const {
  if (keys_of(route) < parallel_keys)
    return 1;
  std::lock_guard<std::mutex> guard{callers_mutex_};
  auto self = std::this_thread::get_id();
  if (callers_.size() < cores_ &&
      std::find(callers_.begin(), callers_.end(), self) == callers_.end())
    callers_.push_back(self);
  return std::max<size_t>(1, cores_ / callers_.size());
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
  // Each shard writes only its own keys' rows of `out`.
  auto err = for_each_shard(*route, threads_for(*route), [&](size_t s) -> caf::error {
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
        if (!part.keys.empty()) {
          auto key_views = part.keys.views();
          if (auto err = store.lookup(key_views, part.keys.hashes(), part.keys.counts(), part_out))
            return err;
          read_staged(**table, key_views, part_out);
        }
        rows.push_back(std::move(part_rows));
      }
    }
    return route->scatter(s, rows, out);
  });
  if (err)
    return err;
  return std::shared_ptr<const routed_batch>{std::move(route)};
}

caf::error direct_embedding::prefetch(const std::vector<table_keys>& tables) const {
  // Dims do not matter: no row is copied.
  routed_batch route{tables, std::vector<uint32_t>(tables.size(), 1), shards_.size()};
  for (auto s : route.shards()) {
    auto& shard = *shards_[s];
    std::lock_guard<std::mutex> guard{shard.mutex};
    for (auto& part : route.part(s)) {
      auto table = shard.tables.find(part.name);
      if (part.keys.empty() || table == shard.tables.end())
        continue;
      if (auto err = table->second.store->prefetch(part.keys.views(), part.keys.hashes()))
        return err;
    }
  }
  return {};
}

caf::error direct_embedding::update(const routed_batch& route,
                                    const std::vector<std::span<const float>>& grads,
                                    int64_t step) const {
  if (auto err = check_routed_gradients(route, grads, configs()))
    return err;
  return for_each_shard(route, threads_for(route), [&](size_t s) -> caf::error {
    auto sums = route.gather(s, grads);
    auto& shard = *shards_[s];
    std::lock_guard<std::mutex> guard{shard.mutex};
    if (auto err = finish_staged(shard.tables))
      return err;
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
    return {};
  });
}

caf::expected<top_k_result> direct_embedding::approximate_top_k(const std::string& name,
                                                                const std::vector<float>& queries,
                                                                uint32_t k, top_k_score score,
                                                                const ann_query& q) const {
  std::vector<top_k_result> parts;
  for (auto& shard : shards_) {
    std::lock_guard<std::mutex> guard{shard->mutex};
    if (auto err = finish_staged(shard->tables))
      return err;
    auto table = stores::find_embedding(shard->tables, name);
    if (!table)
      return std::move(table.error());
    auto part = actors::approximate_top_k(**table, queries, k, score, q);
    if (!part)
      return std::move(part.error());
    parts.push_back(std::move(*part));
  }
  if (parts.empty())
    return make_error(errc::unknown_embedding, "embedding '" + name + "' (no shards)");
  return merge_top_k_results(parts, parts.front().offsets.size() - 1, k);
}

} // namespace darcy::actors
