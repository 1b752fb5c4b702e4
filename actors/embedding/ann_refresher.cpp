#include "actors/embedding/ann_refresher.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
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

/// A training of one table's lists, run on a thread of its own; `done` once `centroids` hold.
struct training_job {
  std::string table;
  const stores::indexed_store* index = nullptr;
  compute::mips::live_ivf::training_plan plan;
  compute::row_matrix centroids;
  std::atomic<bool> done{false};
};

using job_list = std::vector<std::shared_ptr<training_job>>;

/// One pass under the tables' lock: installs the trainings done, then indexes a chunk of every
/// indexed table and plans the trainings due (at most one a table in flight). Answers whether
/// work remains, the shortest refresh_ms among the tables, and the trainings to start.
struct pass_result {
  bool more = false;
  std::chrono::milliseconds tick = idle_tick;
  job_list started;
};

pass_result refresh_once(shard_tables& tables, uint32_t shard, job_list& jobs) {
  pass_result r;
  std::lock_guard<std::mutex> guard{tables.mutex};
  for (auto i = jobs.begin(); i != jobs.end();) {
    auto& job = **i;
    if (!job.done) {
      ++i;
      continue;
    }
    // The table may have been replaced (a restore) while the job ran.
    auto at = tables.tables.find(job.table);
    if (at != tables.tables.end() && at->second.store->ann() == job.index)
      r.more =
        at->second.store->ann()->install_training(job.plan, std::move(job.centroids)) || r.more;
    i = jobs.erase(i);
  }
  for (auto& [name, table] : tables.tables) {
    auto index = table.store->ann();
    if (index == nullptr)
      continue;
    r.tick = std::min(r.tick, std::chrono::milliseconds{index->config().refresh_ms});
    auto left = index->refresh(chunk_rows, false);
    if (!left)
      runtime::log_warn("embedding shard {}: indexing changed rows of '{}': {}", shard, name,
                        render(left.error()));
    else
      r.more = r.more || *left;
    bool in_flight =
      std::any_of(jobs.begin(), jobs.end(), [&](auto& job) { return job->table == name; });
    if (in_flight)
      continue;
    if (auto plan = index->due_training()) {
      auto job = std::make_shared<training_job>();
      job->table = name;
      job->index = index;
      job->plan = std::move(*plan);
      jobs.push_back(job);
      r.started.push_back(std::move(job));
    }
  }
  return r;
}

} // namespace

bool any_ann_table(const shard_tables& tables) {
  return std::any_of(tables.tables.begin(), tables.tables.end(),
                     [](auto& entry) { return entry.second.store->ann() != nullptr; });
}

caf::actor spawn_ann_refresher(caf::local_actor* owner, shard_tables_ptr tables, uint32_t shard) {
  // A scheduled actor, so that it never holds up the actor system's shutdown; the k-means of a
  // training (seconds at millions of rows) runs on a thread of its own that ends with it.
  return owner->spawn<caf::linked>([tables, shard](caf::event_based_actor* self) -> caf::behavior {
    auto jobs = std::make_shared<job_list>();
    self->send(self, tick_atom::value);
    return {[=](tick_atom) {
      auto r = refresh_once(*tables, shard, *jobs);
      for (auto& job : r.started)
        self->spawn<caf::detached>([job] {
          job->centroids = compute::mips::live_ivf::train(job->plan);
          job->done = true;
        });
      if (r.more)
        self->send(self, tick_atom::value);
      else
        self->delayed_send(self, r.tick, tick_atom::value);
    }};
  });
}

} // namespace darcy::actors
