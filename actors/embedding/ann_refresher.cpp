#include "actors/embedding/ann_refresher.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include <caf/event_based_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/error.hpp"
#include "runtime/log.hpp"
#include "stores/embedding/indexed_store.hpp"

namespace darcy::actors {

namespace {

/// Rows indexed per table under one hold of the lock.
constexpr size_t chunk_rows = 1024;
/// The tick while no table keeps an index.
constexpr std::chrono::milliseconds idle_tick{1000};

/// A training the refresher runs without the tables' lock.
struct pending_training {
  std::string table;
  const stores::indexed_store* index = nullptr;
  compute::mips::live_ivf::training_plan plan;
};

/// One pass: a chunk of every indexed table under the lock, then the k-means of the tables
/// due new lists without it (seconds at millions of rows), installed under the lock again.
/// Answers whether work remains, and the shortest refresh_ms among the tables.
std::pair<bool, std::chrono::milliseconds> refresh_once(shard_tables& tables, uint32_t shard) {
  bool more = false;
  auto tick = idle_tick;
  std::vector<pending_training> trainings;
  {
    std::lock_guard<std::mutex> guard{tables.mutex};
    for (auto& [name, table] : tables.tables) {
      auto index = table.store->ann();
      if (index == nullptr)
        continue;
      tick = std::min(tick, std::chrono::milliseconds{index->config().refresh_ms});
      auto left = index->refresh(chunk_rows, false);
      if (!left)
        runtime::log_warn("embedding shard {}: indexing changed rows of '{}': {}", shard, name,
                          render(left.error()));
      else
        more = more || *left;
      if (auto plan = index->due_training())
        trainings.push_back({name, index, std::move(*plan)});
    }
  }
  for (auto& t : trainings) {
    auto centroids = compute::mips::live_ivf::train(t.plan);
    std::lock_guard<std::mutex> guard{tables.mutex};
    auto at = tables.tables.find(t.table);
    // The table may have been replaced (a restore) while the lock was free.
    if (at != tables.tables.end() && at->second.store->ann() == t.index)
      more = at->second.store->ann()->install_training(t.plan, std::move(centroids)) || more;
  }
  return {more, tick};
}

} // namespace

bool any_ann_table(const shard_tables& tables) {
  return std::any_of(tables.tables.begin(), tables.tables.end(),
                     [](auto& entry) { return entry.second.store->ann() != nullptr; });
}

caf::actor spawn_ann_refresher(caf::local_actor* owner, shard_tables_ptr tables, uint32_t shard) {
  return owner->spawn<caf::detached + caf::linked>(
    [tables, shard](caf::event_based_actor* self) -> caf::behavior {
      self->send(self, tick_atom::value);
      return {[=](tick_atom) {
        auto [more, tick] = refresh_once(*tables, shard);
        if (more) {
          std::this_thread::yield(); // the shard's requests waiting for the lock go first
          self->send(self, tick_atom::value);
        } else {
          self->delayed_send(self, tick, tick_atom::value);
        }
      }};
    });
}

} // namespace darcy::actors
