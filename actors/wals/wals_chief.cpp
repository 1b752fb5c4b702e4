#include "actors/wals/wals_chief.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <utility>

#include "actors/checkpoint_coordinator.hpp"
#include "actors/fan_out.hpp"
#include "base/event_log.hpp"
#include "compute/wals_math.hpp"
#include "messages/cluster/cluster_interfaces.hpp"
#include "messages/error.hpp"
#include "runtime/cluster/chaos.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "stores/wals/wals_checkpoint.hpp"

namespace darcy::actors {

namespace {

constexpr auto shard_timeout = std::chrono::minutes(10);

using clock = std::chrono::steady_clock;

stores::checkpoint_dir checkpoint_root(const wals_chief_state& st) {
  return stores::checkpoint_dir{st.config.checkpoint_dir};
}

uint32_t blocks_of(const wals_chief_state& st) {
  return st.side == wals_side::rows ? st.config.row_blocks : st.config.col_blocks;
}

void log_event(wals_chief_pointer self, const std::string& what, uint32_t block = 0,
               uint32_t attempt = 0) {
  auto& st = self->state;
  st.events.push_back({what, st.sweep, st.side, block, attempt});
  if (st.config.checkpoint_dir.empty())
    return;
  auto line = std::to_string(st.incarnation) + ' ' + what + ' ' + std::to_string(st.sweep) + ' ' +
              to_string(st.side) + ' ' + std::to_string(block) + ' ' + std::to_string(attempt);
  if (auto err = base::append_line(stores::wals_event_log(checkpoint_root(st)), line))
    runtime::log_warn("wals chief: event log: {}", render(err));
}

void fail(wals_chief_pointer self, const caf::error& err) {
  runtime::log_error("wals chief: {}", render(err));
  self->quit(err);
}

/// Sends the same request to every shard; `then` runs after the last answer, a failure ends the
/// chief (its supervisor restarts it from the last checkpoint).
template <class Reply, class OnReply, class Then, class... Ts>
void ask_shards(wals_chief_pointer self, OnReply on_reply, Then then, Ts... xs) {
  fan_out<Reply>(
    all_targets(self->state.config.shards.size()),
    [=](size_t s) { return self->request(self->state.config.shards[s], shard_timeout, xs...); },
    on_reply,
    [=](caf::error err) {
      if (err)
        return fail(self, err);
      then();
    });
}

/// Sums the shards' partial Gramians of `side`, in shard order (so the sum is deterministic).
template <class Then>
void gather_gramian(wals_chief_pointer self, wals_side side, Then then) {
  auto parts = std::make_shared<std::vector<std::vector<float>>>(self->state.config.shards.size());
  ask_shards<std::vector<float>>(
    self, [=](size_t s, std::vector<float>& g) { (*parts)[s] = std::move(g); },
    [=] {
      auto d = self->state.config.params.dim;
      std::vector<float> sum(size_t{d} * d, 0.0f);
      for (auto& part : *parts)
        for (size_t i = 0; i < sum.size() && i < part.size(); ++i)
          sum[i] += part[i];
      then(std::move(sum));
    },
    gram_atom::value, side);
}

/// Stops handing out tokens and tells the listener why the run cannot go on.
void give_up_run(wals_chief_pointer self, uint32_t block) {
  auto& st = self->state;
  st.stalled = true;
  log_event(self, "failed", block, st.attempts[block]);
  auto failure = "wals: " + to_string(st.side) + " block " + std::to_string(block) + " of sweep " +
                 std::to_string(st.sweep) + " failed " + std::to_string(st.attempts[block]) +
                 " times (timed out, abandoned by its worker, or its worker went down; the " +
                 "workers' log says why); the last good checkpoint is " +
                 (st.last_checkpoint < 0 ? std::string{"none"}
                                         : "sweep " + std::to_string(st.last_checkpoint) + " in " +
                                             st.config.checkpoint_dir);
  runtime::log_error("{}", failure);
  if (st.config.listener) {
    wals_progress p;
    p.sweep = st.sweep;
    p.side = st.side;
    p.sweeps = st.config.sweeps;
    p.failure = std::move(failure);
    caf::anon_send(st.config.listener, std::move(p));
  }
}

void dispatch(wals_chief_pointer self) {
  auto& st = self->state;
  if (!st.accepting || st.stalled)
    return;
  while (!st.queue.empty() && !st.idle.empty()) {
    auto block = st.queue.front();
    if (st.attempts[block] >= st.config.max_attempts)
      return give_up_run(self, block);
    st.queue.pop_front();
    auto worker = st.idle.front();
    st.idle.pop_front();
    auto attempt = st.attempts[block]++;
    wals_token token{st.epoch, st.sweep, st.side, block, blocks_of(st), attempt, st.gramian};
    self->send(caf::actor_cast<wals_worker_actor>(worker), token_atom::value, std::move(token),
               runtime::public_handle(caf::actor_cast<caf::actor>(self)));
    st.issued[block] = {worker, attempt, clock::now()};
    log_event(self, attempt == 0 ? "issue" : "reissue", block, attempt);
  }
}

void reissue_held_by(wals_chief_pointer self, const caf::actor_addr& worker, const char* why) {
  auto& st = self->state;
  for (auto it = st.issued.begin(); it != st.issued.end();) {
    if (it->second.worker.address() == worker) {
      log_event(self, why, it->first, it->second.attempt);
      st.queue.push_back(it->first);
      it = st.issued.erase(it);
    } else {
      ++it;
    }
  }
}

void forget_idle(wals_chief_pointer self, const caf::actor_addr& worker) {
  auto& idle = self->state.idle;
  idle.erase(std::remove_if(idle.begin(), idle.end(),
                            [&](const caf::actor& w) { return w.address() == worker; }),
             idle.end());
}

// A member stopped or cut off keeps its connection: no down_msg comes for its workers, only
// the registry's verdict. Their tokens are re-issued now instead of after the token timeout.
void on_cluster_event(wals_chief_pointer self, const cluster_event& event) {
  if ((event.kind != cluster_event_kind::member_down &&
       event.kind != cluster_event_kind::member_left) ||
      !event.actor || event.actor.node() == self->node())
    return;
  auto& st = self->state;
  for (auto& w : st.config.workers) {
    if (w.node() != event.actor.node() || st.fenced.count(w.address()) > 0)
      continue;
    st.fenced.insert(w.address());
    forget_idle(self, w.address());
    reissue_held_by(self, w.address(), "member_down");
  }
  dispatch(self);
}

void mark_idle(wals_chief_pointer self, const caf::actor& worker) {
  if (self->state.fenced.count(worker.address()) > 0)
    return;
  auto& idle = self->state.idle;
  if (std::find(idle.begin(), idle.end(), worker) == idle.end())
    idle.push_back(worker);
}

void begin_phase(wals_chief_pointer self);

void finish(wals_chief_pointer self) {
  auto& st = self->state;
  log_event(self, "done");
  wals_progress p;
  p.sweep = st.sweep;
  p.sweeps = st.config.sweeps;
  p.loss = st.losses.empty() ? std::nan("") : st.losses.back();
  p.restored = st.restored;
  p.done = true;
  if (st.config.listener)
    caf::anon_send(st.config.listener, p);
}

/// The factor shards save sweep `st.sweep` as parts of one checkpoint; its manifest (the run,
/// the sweep, the losses) makes it the one to restore.
template <class Then>
void checkpoint(wals_chief_pointer self, Then then) {
  auto& st = self->state;
  if (st.config.checkpoint_dir.empty())
    return then();
  auto root = checkpoint_root(st);
  auto& shards = st.config.shards;
  take_checkpoint<std::vector<file_info>>(
    root, "sweep-" + std::to_string(st.sweep), stores::wals_checkpoints_kept, shards.size(),
    [=](size_t s, const std::string& id) {
      return self->request(self->state.config.shards[s], shard_timeout, save_atom::value,
                           root.root(), id);
    },
    [=](std::vector<std::vector<file_info>>& parts) {
      auto& st = self->state;
      checkpoint_manifest m;
      m.service = wals_service_name;
      m.step = st.sweep;
      m.shard_count = static_cast<uint32_t>(st.config.shards.size());
      m.wals = {st.config.run_id, st.losses};
      for (auto& p : parts)
        m.parts.insert(m.parts.end(), p.begin(), p.end());
      return m;
    },
    [=](caf::expected<checkpoint_manifest> committed) {
      if (!committed)
        return fail(self, committed.error());
      self->state.last_checkpoint = self->state.sweep;
      log_event(self, "checkpoint");
      then();
    });
}

void end_phase(wals_chief_pointer self) {
  auto& st = self->state;
  st.accepting = false;
  ask_shards<ok_atom>(
    self, [](size_t, ok_atom) {},
    [=] {
      auto& st = self->state;
      wals_progress p{st.sweep,         st.side,      st.config.sweeps, st.phase_rows,
                      st.phase_entries, std::nan(""), st.restored,      false};
      if (st.side == wals_side::rows) {
        if (st.config.listener)
          caf::anon_send(st.config.listener, p);
        st.side = wals_side::cols;
        return begin_phase(self);
      }
      gather_gramian(self, wals_side::cols, [=](std::vector<float> gv) {
        auto& st = self->state;
        auto& prm = st.config.params;
        auto& gu = st.rows_gramian;
        double loss = st.observed_loss + prm.sigma * compute::trace_product(gu, gv, prm.dim) +
                      prm.lambda * (compute::trace(gu, prm.dim) + compute::trace(gv, prm.dim));
        st.losses.push_back(loss);
        runtime::process_metrics().record_curve(
          "wals loss, run " + std::to_string(st.config.run_id), st.sweep + 1, loss);
        st.next_gramian = gv;
        auto with_loss = p;
        with_loss.loss = loss;
        if (st.config.listener)
          caf::anon_send(st.config.listener, with_loss);
        checkpoint(self, [=] {
          auto& st = self->state;
          ++st.sweep;
          st.side = wals_side::rows;
          begin_phase(self);
        });
      });
    },
    commit_atom::value, st.epoch, st.side);
}

void begin_phase(wals_chief_pointer self) {
  auto& st = self->state;
  st.accepting = false;
  if (st.sweep >= st.config.sweeps)
    return finish(self);
  if (st.side == wals_side::cols && st.config.faults.stall_sweep >= 0 &&
      st.sweep == static_cast<uint32_t>(st.config.faults.stall_sweep) && !st.restored) {
    st.stalled = true;
    log_event(self, "stall");
    runtime::write_fault_pid(st.config.faults.pid_file);
    return;
  }
  st.epoch = (uint64_t{st.incarnation} << 32) | (st.sweep * 2 + static_cast<uint32_t>(st.side) + 1);
  auto with_gramian = [=](std::vector<float> g) {
    auto& st = self->state;
    st.gramian = std::move(g);
    ask_shards<ok_atom>(
      self, [](size_t, ok_atom) {},
      [=] {
        auto& st = self->state;
        auto blocks = blocks_of(st);
        st.committed.assign(blocks, false);
        st.attempts.clear();
        st.issued.clear();
        st.queue.clear();
        for (uint32_t b = 0; b < blocks; ++b)
          st.queue.push_back(b);
        st.observed_loss = 0;
        st.phase_rows = 0;
        st.phase_entries = 0;
        if (st.side == wals_side::cols)
          st.rows_gramian = st.gramian;
        st.accepting = true;
        log_event(self, "phase");
        dispatch(self);
      },
      begin_atom::value, st.epoch, st.side);
  };
  if (st.side == wals_side::rows && !st.next_gramian.empty())
    return with_gramian(std::exchange(st.next_gramian, {}));
  gather_gramian(self, opposite(st.side), with_gramian);
}

/// The checkpoint of this run to resume from, if the directory holds one.
std::optional<checkpoint_manifest> find_checkpoint(wals_chief_state& st) {
  if (st.config.checkpoint_dir.empty())
    return std::nullopt;
  std::vector<std::string> skipped;
  auto m = stores::find_wals_checkpoint(checkpoint_root(st), st.config.run_id, skipped);
  for (auto& why : skipped)
    runtime::log_warn("wals chief: passing over {}", why);
  if (!m) {
    if (!skipped.empty())
      runtime::log_warn("wals chief: no intact checkpoint of this run is left; starting over");
    return std::nullopt;
  }
  if (!skipped.empty())
    runtime::log_warn("wals chief: resuming from the older checkpoint of sweep {}", m->step);
  return std::move(*m);
}

void tick(wals_chief_pointer self) {
  auto& st = self->state;
  auto now = clock::now();
  auto limit = std::chrono::milliseconds(st.config.token_timeout_ms);
  for (auto it = st.issued.begin(); it != st.issued.end();) {
    if (now - it->second.issued > limit) {
      log_event(self, "timeout", it->first, it->second.attempt);
      st.queue.push_back(it->first);
      it = st.issued.erase(it);
    } else {
      ++it;
    }
  }
  // A worker neither idle nor holding a token, and not known dead, waits for a message that
  // was lost (its token, its commit, or the chief's announcement). Announcing the chief again
  // makes an idle one report ready; a busy one (slow, or on a token that timed out) commits
  // when it is done and is idle then.
  std::set<caf::actor_addr> accounted;
  for (auto& w : st.idle)
    accounted.insert(w.address());
  for (auto& [block, held] : st.issued)
    accounted.insert(held.worker.address());
  for (auto& w : st.config.workers)
    if (!accounted.count(w.address()) && !st.fenced.count(w.address()))
      self->send(w, chief_atom::value, runtime::public_handle(caf::actor_cast<caf::actor>(self)));
  dispatch(self);
}

} // namespace

wals_chief_actor::behavior_type wals_chief(wals_chief_pointer self, wals_chief_config config) {
  auto& st = self->state;
  st.config = std::move(config);
  std::random_device entropy;
  st.incarnation = (entropy() & 0x7fffffffu) | 1u;
  if (!st.config.checkpoint_dir.empty())
    if (auto err = checkpoint_root(st).prepare())
      runtime::log_warn("wals chief: {}", render(err));
  self->set_down_handler([=](caf::down_msg& msg) {
    // A dead worker is never idle again, whatever a timeout later says.
    self->state.fenced.insert(msg.source);
    forget_idle(self, msg.source);
    reissue_held_by(self, msg.source, "down");
    dispatch(self);
  });
  if (auto registry = self->system().registry().get<registry_actor>(registry_key))
    self->send(registry, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
  for (auto& w : st.config.workers) {
    self->monitor(w);
    self->send(w, chief_atom::value, runtime::public_handle(caf::actor_cast<caf::actor>(self)));
  }
  auto period =
    std::chrono::milliseconds(std::clamp<int64_t>(st.config.token_timeout_ms / 4, 10, 1000));
  self->delayed_send(self, period, tick_atom::value);
  auto resume = find_checkpoint(st);
  if (resume) {
    st.restored = true;
    st.sweep = static_cast<uint32_t>(resume->step);
    st.last_checkpoint = resume->step;
    st.losses = resume->wals.losses;
    log_event(self, "restore");
    ask_shards<ok_atom>(
      self, [](size_t, ok_atom) {},
      [=] {
        auto& st = self->state;
        // The listener learns the losses of the restored sweeps as if it had seen them.
        for (uint32_t i = 0; i < st.losses.size() && st.config.listener; ++i)
          caf::anon_send(st.config.listener, wals_progress{i, wals_side::cols, st.config.sweeps, 0,
                                                           0, st.losses[i], true, false});
        ++st.sweep;
        st.side = wals_side::rows;
        begin_phase(self);
      },
      load_atom::value, st.config.checkpoint_dir, *resume);
  } else {
    begin_phase(self);
  }
  return {
    [=](const cluster_event& event) { on_cluster_event(self, event); },
    [=](ready_atom, const wals_token_id& last, caf::actor worker) {
      auto& st = self->state;
      if (st.fenced.count(worker.address()) > 0)
        return;
      // Readies pile up in the mailbox of a worker still loading its data, one per
      // announcement: only one sent after the worker received its token abandons the token.
      for (auto& [block, held] : st.issued)
        if (held.worker.address() == worker.address() &&
            last != wals_token_id{st.epoch, block, held.attempt})
          return;
      reissue_held_by(self, worker.address(), "abandon");
      mark_idle(self, worker);
      dispatch(self);
    },
    [=](commit_atom, const wals_commit& c, caf::actor worker) {
      auto& st = self->state;
      auto it = st.issued.find(c.block);
      if (st.accepting && c.epoch == st.epoch && it != st.issued.end() &&
          it->second.attempt == c.attempt && c.block < st.committed.size() &&
          !st.committed[c.block]) {
        st.committed[c.block] = true;
        st.issued.erase(it);
        st.observed_loss += c.observed_loss;
        st.phase_rows += c.rows;
        st.phase_entries += c.entries;
        log_event(self, "commit", c.block, c.attempt);
      } else {
        log_event(self, "stale", c.block, c.attempt);
      }
      mark_idle(self, worker);
      if (st.accepting &&
          std::all_of(st.committed.begin(), st.committed.end(), [](bool b) { return b; }))
        return end_phase(self);
      dispatch(self);
    },
    [=](events_atom) { return self->state.events; },
    [=](tick_atom) {
      tick(self);
      self->delayed_send(self, period, tick_atom::value);
    },
  };
}

} // namespace darcy::actors
