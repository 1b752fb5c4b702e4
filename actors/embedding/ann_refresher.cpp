#include "actors/embedding/ann_refresher.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

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

/// One pass: a chunk of every indexed table. Answers whether work remains, and the shortest
/// refresh_ms among the tables.
std::pair<bool, std::chrono::milliseconds> refresh_once(shard_tables& tables, uint32_t shard) {
  std::lock_guard<std::mutex> guard{tables.mutex};
  bool more = false;
  auto tick = idle_tick;
  for (auto& [name, table] : tables.tables) {
    auto index = table.store->ann();
    if (index == nullptr)
      continue;
    tick = std::min(tick, std::chrono::milliseconds{index->config().refresh_ms});
    auto left = index->refresh(chunk_rows);
    if (!left)
      runtime::log_warn("embedding shard {}: indexing changed rows of '{}': {}", shard, name,
                        render(left.error()));
    else
      more = more || *left;
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
