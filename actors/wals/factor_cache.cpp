#include "actors/wals/factor_cache.hpp"

#include <map>

#include "stores/embedding/huge_pages.hpp"

namespace darcy::actors {

std::shared_ptr<factor_cache> factor_cache::of(const std::vector<factor_shard_actor>& shards) {
  static std::mutex mutex;
  static std::map<caf::actor_addr, std::weak_ptr<factor_cache>> caches;
  // A run's shards are never another run's, so its first shard names the run.
  auto key = shards.empty() ? caf::actor_addr{} : caf::actor_cast<caf::actor_addr>(shards[0]);
  std::lock_guard<std::mutex> guard{mutex};
  std::erase_if(caches, [](auto& entry) { return entry.second.expired(); });
  if (auto i = caches.find(key); i != caches.end())
    if (auto cache = i->second.lock())
      return cache;
  auto cache = std::make_shared<factor_cache>(shards.size());
  caches[key] = cache;
  return cache;
}

factor_snapshot factor_cache::get(size_t shard, wals_side side) const {
  std::lock_guard<std::mutex> guard{mutex_};
  return entries_[shard][static_cast<size_t>(side)];
}

void factor_cache::put(size_t shard, wals_side side, factor_snapshot view) {
  // Blocks read these rows at random: on huge pages, a read costs fewer TLB misses.
  auto values = view.rows.values();
  stores::advise_huge_pages(const_cast<float*>(values.data()), values.size_bytes(), true);
  std::lock_guard<std::mutex> guard{mutex_};
  auto& entry = entries_[shard][static_cast<size_t>(side)];
  if (view.version > entry.version)
    entry = std::move(view);
}

} // namespace darcy::actors
