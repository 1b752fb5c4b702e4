#include "actors/embedding/embedding_shard.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "actors/embedding/ann_refresher.hpp"
#include "actors/embedding/shard_checkpoint.hpp"
#include "actors/embedding/shard_queries.hpp"
#include "actors/embedding/staged_rows.hpp"
#include "compute/placement.hpp"
#include "messages/error.hpp"
#include "runtime/idle_work.hpp"
#include "runtime/log.hpp"
#include "runtime/system_config.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"
#include "stores/checkpoint/checkpoint_io.hpp"
#include "stores/embedding/background_priority.hpp"
#include "stores/embedding/chain_replay.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::actors {

namespace {

using shard_pointer = embedding_shard_actor::stateful_pointer<embedding_shard_state>;

// The table of `name` after checking the batch; an error when either is wrong.
caf::expected<embedding_shard_state::table*> checked_table(shard_pointer self,
                                                           const std::string& name, size_t batch) {
  auto table = stores::find_embedding(self->state.tables(), name);
  if (table)
    if (auto err = stores::check_batch((*table)->config, batch))
      return err;
  return table;
}

std::vector<std::string_view> views(const std::vector<std::string>& keys) {
  return {keys.begin(), keys.end()};
}

caf::expected<embedding_shard_state::table*> find_table(shard_pointer self,
                                                        const std::string& name) {
  return stores::find_embedding(self->state.tables(), name);
}

caf::result<ok_atom> create(shard_pointer self, de_config& cfg) {
  auto& tables = self->state.tables();
  if (auto i = tables.find(cfg.name); i != tables.end()) {
    if (i->second.config.dim != cfg.dim)
      return make_error(errc::invalid_config, "embedding '" + cfg.name + "' exists with dim " +
                                                std::to_string(i->second.config.dim));
    return ok_atom::value;
  }
  auto store = stores::make_store(stores::shard_config(cfg, self->state.index));
  if (!store && is(store.error(), errc::unknown_rule)) // its plugin is missing on this node
    return make_error(errc::unknown_rule, "node '" + runtime::node_name(self->system()) +
                                            "', embedding '" + cfg.name +
                                            "': " + to_plain(store.error()).context);
  if (!store)
    return std::move(store.error());
  auto name = cfg.name;
  tables.emplace(name, embedding_shard_state::table{std::move(cfg), std::move(*store)});
  return ok_atom::value;
}

caf::result<std::vector<float>> lookup(shard_pointer self, const std::string& name,
                                       const std::vector<std::string>& keys) {
  auto table = checked_table(self, name, keys.size());
  if (!table)
    return std::move(table.error());
  auto& store = *(*table)->store;
  std::vector<float> out(keys.size() * store.dim());
  auto key_views = views(keys);
  if (auto err = store.lookup(key_views, out))
    return err;
  read_staged(**table, key_views, out);
  return out;
}

caf::result<ok_atom> update(shard_pointer self, const std::string& name,
                            const std::vector<std::string>& keys, const std::vector<float>& grads,
                            int64_t step, uint64_t request_id = 0) {
  if (self->state.applied.seen(request_id))
    return ok_atom::value;
  auto table = checked_table(self, name, keys.size());
  if (!table)
    return std::move(table.error());
  auto key_views = views(keys);
  if (auto err = (*table)->store->update(key_views, grads, step))
    return err;
  self->state.applied.remember(request_id);
  return ok_atom::value;
}

// Checks every table of a flat request before any is touched: known, within max_batch, and,
// with grads, one finite buffer of keys * dim values per table.
caf::expected<std::vector<embedding_shard_state::table*>> checked_tables(
  shard_pointer self, const std::vector<table_keys>& tables,
  const std::vector<shared_floats>* grads) {
  if (grads != nullptr && grads->size() != tables.size())
    return make_error(errc::dimension_mismatch, std::to_string(grads->size()) +
                                                  " gradient buffers for " +
                                                  std::to_string(tables.size()) + " tables");
  std::vector<embedding_shard_state::table*> result;
  for (size_t t = 0; t < tables.size(); ++t) {
    auto& keys = tables[t].keys;
    auto table = keys.empty() ? stores::find_embedding(self->state.tables(), tables[t].name)
                              : checked_table(self, tables[t].name, keys.size());
    if (!table)
      return std::move(table.error());
    if (grads != nullptr && !keys.empty())
      if (auto err = stores::check_gradients((*table)->config, keys.size(), (*grads)[t].values()))
        return err;
    result.push_back(*table);
  }
  return result;
}

void keep_pending(shard_pointer self, uint64_t handle, std::vector<table_keys> tables) {
  auto& st = self->state;
  size_t bytes = 0;
  for (auto& t : tables)
    bytes += t.keys.key_bytes() + t.keys.size() * 2 * sizeof(uint64_t);
  st.pending.push_back({handle, std::move(tables), bytes});
  st.pending_bytes += bytes;
  while (st.pending.size() > max_pending_lookups ||
         (st.pending.size() > 1 && st.pending_bytes > st.max_pending_bytes)) {
    st.pending_bytes -= st.pending.front().bytes;
    st.pending.pop_front();
  }
}

caf::result<std::vector<shared_floats>> lookup_tables(shard_pointer self,
                                                      std::vector<table_keys>& tables,
                                                      uint64_t handle) {
  auto checked = checked_tables(self, tables, nullptr);
  if (!checked)
    return std::move(checked.error());
  std::vector<shared_floats> result;
  for (size_t t = 0; t < tables.size(); ++t) {
    auto& store = *(*checked)[t]->store;
    auto& keys = tables[t].keys;
    // The store writes every row, so the reply's buffer starts uninitialised.
    auto [rows, out] = shared_floats::allocate(keys.size() * store.dim());
    if (!keys.empty()) {
      auto key_views = keys.views();
      if (auto err = store.lookup(key_views, keys.hashes(), keys.counts(), out))
        return err;
      read_staged(*(*checked)[t], key_views, out);
    }
    result.push_back(std::move(rows));
  }
  if (handle != 0)
    keep_pending(self, handle, std::move(tables));
  return result;
}

// Applies grads to tables after checking all of them; the request id is applied once.
caf::error apply_tables(shard_pointer self, const std::vector<table_keys>& tables,
                        const std::vector<shared_floats>& grads, int64_t step,
                        uint64_t request_id) {
  auto checked = checked_tables(self, tables, &grads);
  if (!checked)
    return std::move(checked.error());
  for (size_t t = 0; t < tables.size(); ++t) {
    auto& keys = tables[t].keys;
    if (keys.empty())
      continue;
    if (auto err =
          (*checked)[t]->store->update(keys.views(), keys.hashes(), grads[t].values(), step))
      return err;
  }
  self->state.applied.remember(request_id);
  return {};
}

caf::result<ok_atom> update_tables(shard_pointer self, const std::vector<table_keys>& tables,
                                   const std::vector<shared_floats>& grads, int64_t step,
                                   uint64_t request_id) {
  if (self->state.applied.seen(request_id))
    return ok_atom::value;
  if (auto err = apply_tables(self, tables, grads, step, request_id))
    return err;
  return ok_atom::value;
}

caf::result<ok_atom> backward(shard_pointer self, uint64_t handle,
                              const std::vector<shared_floats>& grads, int64_t step) {
  auto& st = self->state;
  if (st.applied.seen(handle))
    return ok_atom::value;
  auto i = std::find_if(st.pending.rbegin(), st.pending.rend(),
                        [&](const auto& p) { return p.handle == handle; });
  if (i == st.pending.rend())
    return make_error(errc::not_found, "lookup handle " + std::to_string(handle) +
                                         " is not held by shard " + std::to_string(st.index) +
                                         " (expired, or the shard restarted since the lookup)");
  // A refused backward (a bad shape, a NaN) keeps the handle, so that a corrected one can
  // follow.
  if (auto err = apply_tables(self, i->tables, grads, step, handle))
    return err;
  st.pending_bytes -= i->bytes;
  st.pending.erase(std::next(i).base());
  return ok_atom::value;
}

/// Shard `index` of `count`'s changes in sync link `link` under `dir`, read and decoded.
caf::expected<std::vector<stores::link_changes>> read_changes(const std::string& dir,
                                                              const checkpoint_manifest& link,
                                                              uint32_t index, uint32_t count) {
  std::vector<stores::link_changes> changes;
  for (auto& entry : link.embeddings) {
    auto read = stores::read_link(dir, link, entry.config.name, index, count);
    if (!read)
      return std::move(read.error());
    changes.push_back(std::move(*read));
  }
  return changes;
}

/// A link's changes to the shard's tables, read and decoded, with the rows of each table that
/// get no whole part staged for merging (null: applied at once).
struct read_link_changes {
  std::vector<stores::link_changes> changes;
  std::vector<std::shared_ptr<staged_rows>> staged;
};

/// The rows of a sync a lookup waits for at most: one merge step.
constexpr size_t merge_chunk_rows = 1024;
/// How long a sync's read may go on without getting half of a CPU before the shard reads it at
/// nice 10 as well (see run_in_idle_time).
constexpr std::chrono::milliseconds read_patience{100};

caf::expected<read_link_changes> read_and_stage(const std::string& dir,
                                                const checkpoint_manifest& link, uint32_t index,
                                                uint32_t count) {
  auto changes = read_changes(dir, link, index, count);
  if (!changes)
    return std::move(changes.error());
  read_link_changes out{std::move(*changes), {}};
  for (auto& c : out.changes) {
    bool stageable = c.whole_parts.empty() && !c.rows.empty() &&
                     std::all_of(c.rows.begin(), c.rows.end(), [&](const stores::stored_row& r) {
                       return r.values.size() == c.config.dim;
                     });
    out.staged.push_back(stageable ? std::make_shared<staged_rows>(std::move(c.rows)) : nullptr);
  }
  return out;
}

/// Applies `read` to the shard's tables in one go, the tables' lock held: deleted keys go and
/// whole parts replace their rows at once, and the changed rows of the other tables are staged,
/// which lookups read from now on. Answers the tables staged.
caf::expected<std::vector<std::pair<std::string, std::shared_ptr<staged_rows>>>> apply_changes(
  shard_pointer self, const checkpoint_manifest& link, read_link_changes& read, uint32_t index) {
  auto& tables = self->state.tables();
  if (auto err = finish_staged(tables))
    return err;
  for (auto& c : read.changes)
    if (tables.count(c.config.name) == 0) {
      auto store = stores::make_store(stores::shard_config(c.config, index));
      if (!store)
        return std::move(store.error());
      tables.emplace(c.config.name, embedding_shard_state::table{c.config, std::move(*store)});
    }
  std::vector<std::pair<std::string, std::shared_ptr<staged_rows>>> staged;
  for (size_t i = 0; i < read.changes.size(); ++i) {
    auto& c = read.changes[i];
    auto& table = tables.at(c.config.name);
    auto& store = *table.store;
    std::vector<std::string> gone;
    if (!c.whole_parts.empty()) {
      std::set<uint32_t> whole(c.whole_parts.begin(), c.whole_parts.end());
      auto err = store.scan([&](std::string_view key, std::span<const float>) {
        if (whole.count(static_cast<uint32_t>(compute::shard_of_key(key, link.shard_count))) > 0)
          gone.emplace_back(key);
      });
      if (err)
        return err;
    }
    gone.insert(gone.end(), c.deleted.begin(), c.deleted.end());
    std::vector<std::string_view> views(gone.begin(), gone.end());
    if (auto err = store.remove_rows(views))
      return err;
    if (read.staged[i]) {
      table.staged = read.staged[i];
      staged.emplace_back(c.config.name, read.staged[i]);
      continue;
    }
    for (auto& row : c.rows)
      if (auto err = store.import_row(row.record()))
        return err;
  }
  return staged;
}

/// Merges `staged` into its tables on a thread of its own, a chunk of rows at a time under the
/// tables' lock. A table whose staged rows were finished or replaced meanwhile is left alone;
/// a failed import leaves the rows staged, for finish_staged to try again.
void merge_in_background(shard_pointer self,
                         std::vector<std::pair<std::string, std::shared_ptr<staged_rows>>> staged) {
  if (staged.empty())
    return;
  auto merger = self->spawn<caf::detached>(
    [tables = self->state.shared, staged](caf::event_based_actor* helper) -> caf::behavior {
      return {[=](load_atom) {
        for (auto& [name, rows] : staged)
          for (bool done = false; !done;) {
            {
              std::lock_guard<std::mutex> guard{tables->mutex};
              auto at = tables->tables.find(name);
              if (at == tables->tables.end() || at->second.staged != rows)
                break;
              auto merged = rows->merge(*at->second.store, merge_chunk_rows);
              done = !merged || *merged;
              if (merged && *merged)
                at->second.staged.reset();
            }
            std::this_thread::yield(); // the lookups waiting for the lock go first
          }
        helper->quit();
      }};
    });
  caf::anon_send(merger, load_atom::value);
}

} // namespace

/// A sync's read, shared by the shard and its reader thread; `result` is set before the reader
/// tells the shard.
struct embedding_shard_state::sync_read {
  caf::expected<read_link_changes> result =
    make_error(errc::io_error, "sync: the link was not read");
  /// Set, after `result`, when the reader is done with it.
  std::atomic<bool> done{false};
};

namespace {

/// Applies the read of sync `request_id` and answers the request and every repeat of it.
void finish_sync(shard_pointer self, const checkpoint_manifest& link, uint32_t index,
                 uint64_t request_id) {
  auto at = self->state.applying.find(request_id);
  auto read = std::move(at->second.read);
  auto waiting = std::move(at->second.waiting);
  self->state.applying.erase(at);
  auto answer = [&](caf::expected<ok_atom> result) {
    for (auto& p : waiting)
      if (result)
        p.deliver(ok_atom::value);
      else
        p.deliver(result.error());
  };
  if (!read->result) {
    answer(read->result.error());
    return;
  }
  std::vector<std::pair<std::string, std::shared_ptr<staged_rows>>> staged;
  {
    std::lock_guard<std::mutex> guard{self->state.shared->mutex};
    runtime::timed_request timing{*self->state.metrics, "apply_part", self->mailbox().size()};
    if (!self->state.applied.seen(request_id)) {
      auto applied = apply_changes(self, link, *read->result, index);
      if (!applied) {
        answer(std::move(applied.error()));
        return;
      }
      staged = std::move(*applied);
      self->state.applied.remember(request_id);
    }
  }
  merge_in_background(self, std::move(staged));
  answer(ok_atom::value);
}

/// The files of the link are read on a thread of their own while the shard goes on serving;
/// then the link is applied in one handler, so that a lookup sees all or none of it: its rows
/// are staged there and merged into the stores afterwards, a chunk at a time. The reader gets
/// no request and gives no answer: once the read is done it sends the sync again, anonymously,
/// with a shard count of 0. So a reader that ends after its shard stopped leaves nothing that
/// waits for it.
caf::result<ok_atom> apply_part(shard_pointer self, const std::string& dir,
                                const checkpoint_manifest& link, uint32_t index, uint32_t count,
                                uint64_t request_id) {
  if (self->state.applied.seen(request_id))
    return ok_atom::value;
  auto at = self->state.applying.find(request_id);
  if (count == 0) { // the reader's notice
    if (at == self->state.applying.end() || !at->second.read->done.load())
      return make_error(errc::invalid_argument, "sync: a shard count of 0");
    finish_sync(self, link, index, request_id);
    return ok_atom::value;
  }
  auto promise = self->make_response_promise<ok_atom>();
  if (at != self->state.applying.end()) { // a repeat: the first one's answer
    at->second.waiting.push_back(promise);
    return promise;
  }
  auto read = std::make_shared<embedding_shard_state::sync_read>();
  self->state.applying[request_id] = {read, {promise}};
  auto reader =
    self->spawn<caf::detached>([read, dir, link, index, count, request_id,
                                shard = caf::actor_cast<embedding_shard_actor>(self)](
                                 caf::event_based_actor* helper) mutable -> caf::behavior {
      return {[helper, read = std::move(read), dir, link, index, count, request_id,
               shard = std::move(shard)](load_atom) mutable {
        // Background work: the lookups of this node's shards go first. The read takes the idle
        // CPU time; when there is none, this thread reads at nice 10 (it ends with the read).
        stores::lower_thread_priority(10);
        read->result = runtime::run_in_idle_time(
          [dir, link, index, count] { return read_and_stage(dir, link, index, count); },
          read_patience);
        read->done = true;
        read.reset();
        caf::anon_send(shard, apply_part_atom::value, dir, link, index, uint32_t{0}, request_id);
        shard = nullptr;
        helper->quit();
      }};
    });
  caf::anon_send(reader, load_atom::value);
  return promise;
}

caf::result<embedding_stats> stats(shard_pointer self, const std::string& name) {
  auto table = find_table(self, name);
  if (!table)
    return std::move(table.error());
  return (*table)->store->stats();
}

} // namespace

std::vector<embedding_shard_actor> spawn_shards(caf::actor_system& sys, size_t count) {
  return spawn_local_shards(sys, count).actors;
}

namespace {

/// What a shard handler holds while it runs: the tables' lock, and its timing. Every handler
/// but a lookup first merges the rows of a sync still staged.
struct shard_request {
  shard_request(shard_pointer self, const char* op)
    : self{self},
      guard{self->state.shared->mutex},
      timing{*self->state.metrics, op, self->mailbox().size()} {
    if (std::string_view{op} != "lookup")
      if (auto err = finish_staged(self->state.tables()))
        runtime::log_warn("embedding shard {}: merging a sync's rows: {}", self->state.index,
                          render(err));
  }
  /// A table that keeps an ANN index gets the shard its refresher.
  ~shard_request() {
    auto& st = self->state;
    if (!st.ann_refresher && any_ann_table(*st.shared))
      st.ann_refresher = spawn_ann_refresher(self, st.shared, st.index);
  }
  shard_pointer self;
  std::lock_guard<std::mutex> guard;
  runtime::timed_request timing;
};

} // namespace

local_shards spawn_local_shards(caf::actor_system& sys, size_t count) {
  local_shards result;
  for (size_t i = 0; i < count; ++i) {
    result.tables.push_back(std::make_shared<shard_tables>());
    result.actors.push_back(
      sys.spawn(embedding_shard_over, static_cast<uint32_t>(i), result.tables.back()));
  }
  return result;
}

embedding_shard_actor::behavior_type embedding_shard(shard_pointer self, uint32_t index) {
  return embedding_shard_over(self, index, std::make_shared<shard_tables>());
}

embedding_shard_actor::behavior_type embedding_shard_over(shard_pointer self, uint32_t index,
                                                          shard_tables_ptr tables) {
  self->state.index = index;
  self->state.shared = std::move(tables);
  auto instance = std::to_string(index) + "." + std::to_string(self->id());
  self->state.metrics = std::make_unique<runtime::service_metrics>("embedding_shard", instance);
  self->state.sizes = runtime::process_metrics().add_collector(
    [weak = std::weak_ptr<shard_tables>{self->state.shared},
     labels = self->state.metrics->labels()](runtime::metric_sink& sink) {
      auto tables = weak.lock();
      if (!tables)
        return;
      std::lock_guard<std::mutex> guard{tables->mutex};
      for (auto& [name, table] : tables->tables) {
        auto stats = table.store->stats();
        auto with_table = labels;
        with_table.emplace_back("table", name);
        sink.gauge("darcy_store_rows", "Rows a shard's store holds", with_table,
                   static_cast<double>(stats.rows));
        sink.gauge("darcy_store_bytes", "Memory a shard's store holds for its rows", with_table,
                   static_cast<double>(stats.bytes));
      }
    });
  // Every handler holds the tables' lock, and is timed while it does.
  auto enter = [self](const char* op) { return shard_request{self, op}; };
  return {
    [self, enter](create_atom, de_config& cfg) {
      auto request = enter("create");
      return create(self, cfg);
    },
    [self, enter](lookup_atom, const std::string& name, const std::vector<std::string>& keys) {
      auto request = enter("lookup");
      return lookup(self, name, keys);
    },
    [self, enter](update_atom, const std::string& name, const std::vector<std::string>& keys,
                  const std::vector<float>& grads, int64_t step) {
      auto request = enter("update");
      return update(self, name, keys, grads, step);
    },
    [self, enter](update_atom, const std::string& name, const std::vector<std::string>& keys,
                  const std::vector<float>& grads, int64_t step, uint64_t request_id) {
      auto request = enter("update");
      return update(self, name, keys, grads, step, request_id);
    },
    [self, enter](lookup_atom, std::vector<table_keys>& tables, uint64_t handle) {
      auto request = enter("lookup");
      return lookup_tables(self, tables, handle);
    },
    [self, enter](backward_atom, uint64_t handle, const std::vector<shared_floats>& grads,
                  int64_t step) {
      auto request = enter("backward");
      return backward(self, handle, grads, step);
    },
    [self, enter](update_atom, const std::vector<table_keys>& tables,
                  const std::vector<shared_floats>& grads, int64_t step, uint64_t request_id) {
      auto request = enter("update");
      return update_tables(self, tables, grads, step, request_id);
    },
    [self, enter](top_k_atom, const std::string& name, const std::vector<float>& queries,
                  uint32_t k, top_k_score score) {
      auto request = enter("top_k");
      return shard_queries::top_k(self, name, queries, k, score);
    },
    [self, enter](top_k_atom, const std::string& name, const std::vector<float>& queries,
                  uint32_t k, top_k_score score, const ann_query& q) {
      auto request = enter("ann_top_k");
      return shard_queries::approximate_top_k(self, name, queries, k, score, q);
    },
    [self, enter](prefetch_atom, const std::vector<table_keys>& tables) {
      auto request = enter("prefetch");
      shard_queries::prefetch(self, tables);
    },
    [self, enter](full_logits_atom, const std::string& name, const std::vector<float>& queries,
                  uint64_t max_rows) {
      auto request = enter("full_logits");
      return shard_queries::full_logits(self, name, queries, max_rows);
    },
    [self, enter](full_backward_atom, const std::string& name, const std::vector<std::string>& keys,
                  const std::vector<float>& queries, const std::vector<float>& dlogits,
                  int64_t step) {
      auto request = enter("full_backward");
      return shard_queries::full_backward(self, name, keys, queries, dlogits, step, 0);
    },
    [self, enter](full_backward_atom, const std::string& name, const std::vector<std::string>& keys,
                  const std::vector<float>& queries, const std::vector<float>& dlogits,
                  int64_t step, uint64_t request_id) {
      auto request = enter("full_backward");
      return shard_queries::full_backward(self, name, keys, queries, dlogits, step, request_id);
    },
    [self, enter](sample_stats_atom, const std::string& name,
                  const std::vector<std::string>& positives) {
      auto request = enter("sample_stats");
      return shard_queries::sample_metadata(self, name, positives);
    },
    [self, enter](sample_part_atom, const std::string& name, const sample_plan& plan) {
      auto request = enter("sample_part");
      return shard_queries::sample_part(self, name, plan);
    },
    [self, enter](save_part_atom, const std::string& dir, const std::string& id, uint32_t part,
                  const std::string& base, uint64_t track_limit) {
      auto request = enter("save_part");
      return shard_checkpoint::save_part(self, dir, id, part, base, track_limit);
    },
    [self](apply_part_atom, const std::string& dir, const checkpoint_manifest& link, uint32_t index,
           uint32_t count,
           uint64_t request_id) { return apply_part(self, dir, link, index, count, request_id); },
    [self, enter](load_part_atom, const std::string& dir, const checkpoint_manifest& manifest,
                  uint32_t part, uint32_t count, uint64_t request_id) {
      auto request = enter("load_part");
      return shard_checkpoint::load_part(self, dir, manifest, part, count, request_id);
    },
    [self, enter](stats_atom, const std::string& name) {
      auto request = enter("stats");
      return stats(self, name);
    },
  };
}

} // namespace darcy::actors
