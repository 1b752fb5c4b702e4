#include "actors/wals/wals_chief.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <utility>


#include "actors/fan_out.hpp"
#include "compute/wals_math.hpp"
#include "messages/error.hpp"
#include "runtime/chaos.hpp"
#include "runtime/log.hpp"
#include "stores/atomic_file.hpp"

namespace darcy::actors {

namespace {

constexpr auto shard_timeout = std::chrono::minutes(10);

using clock = std::chrono::steady_clock;

wals_side opposite(wals_side side) {
  return side == wals_side::rows ? wals_side::cols : wals_side::rows;
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
  std::ofstream out{chief_event_log(st.config.checkpoint_dir), std::ios::app};
  out << st.incarnation << ' ' << what << ' ' << st.sweep << ' ' << to_string(st.side) << ' '
      << block << ' ' << attempt << '\n';
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

void dispatch(wals_chief_pointer self) {
  auto& st = self->state;
  if (!st.accepting || st.stalled)
    return;
  while (!st.queue.empty() && !st.idle.empty()) {
    auto block = st.queue.front();
    st.queue.pop_front();
    auto worker = st.idle.front();
    st.idle.pop_front();
    auto attempt = st.attempts[block]++;
    wals_token token{st.epoch, st.sweep, st.side, block, blocks_of(st), attempt, st.gramian};
    self->send(caf::actor_cast<wals_worker_actor>(worker), token_atom::value, std::move(token),
               caf::actor_cast<caf::actor>(self));
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

void mark_idle(wals_chief_pointer self, const caf::actor& worker) {
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

std::string state_text(const wals_chief_state& st) {
  std::ostringstream out;
  out.precision(17);
  out << "run_id " << st.config.run_id << "\nsweep " << st.sweep << "\nphase rows\ncommitted\n"
      << "losses";
  for (auto l : st.losses)
    out << ' ' << l;
  out << '\n';
  return out.str();
}

/// Shards save sweep `st.sweep`, then the chief's state file makes it the one to restore.
template <class Then>
void checkpoint(wals_chief_pointer self, Then then) {
  auto& dir = self->state.config.checkpoint_dir;
  if (dir.empty())
    return then();
  ask_shards<ok_atom>(
    self, [](size_t, ok_atom) {},
    [=] {
      auto& st = self->state;
      if (auto err = stores::write_file_atomically(chief_state_file(dir), state_text(st)))
        return fail(self, err);
      if (st.sweep >= 2) {
        std::error_code ec;
        std::filesystem::remove_all(dir + "/sweep-" + std::to_string(st.sweep - 2), ec);
      }
      log_event(self, "checkpoint");
      then();
    },
    save_atom::value, dir, self->state.sweep);
}

void end_phase(wals_chief_pointer self) {
  auto& st = self->state;
  st.accepting = false;
  ask_shards<ok_atom>(
    self, [](size_t, ok_atom) {},
    [=] {
      auto& st = self->state;
      wals_progress p{st.sweep, st.side, st.config.sweeps, st.phase_rows, st.phase_entries,
                      std::nan(""), st.restored, false};
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

/// Parses the state file; returns the sweep to resume after, or nothing for another run.
std::optional<uint32_t> read_state(wals_chief_state& st) {
  auto text = stores::read_file(chief_state_file(st.config.checkpoint_dir));
  if (!text)
    return std::nullopt;
  std::istringstream in{*text};
  std::string key;
  uint64_t run_id = 0;
  uint32_t sweep = 0;
  std::vector<double> losses;
  while (in >> key) {
    if (key == "run_id")
      in >> run_id;
    else if (key == "sweep")
      in >> sweep;
    else if (key == "losses") {
      std::string rest;
      std::getline(in, rest);
      std::istringstream values{rest};
      double l;
      while (values >> l)
        losses.push_back(l);
    }
  }
  if (run_id != st.config.run_id)
    return std::nullopt;
  st.losses = std::move(losses);
  return sweep;
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
  dispatch(self);
}

} // namespace

std::string chief_state_file(const std::string& dir) { return dir + "/chief.state"; }

std::string chief_event_log(const std::string& dir) { return dir + "/events.log"; }

wals_chief_actor::behavior_type wals_chief(wals_chief_pointer self, wals_chief_config config) {
  auto& st = self->state;
  st.config = std::move(config);
  std::random_device entropy;
  st.incarnation = (entropy() & 0x7fffffffu) | 1u;
  if (!st.config.checkpoint_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(st.config.checkpoint_dir, ec);
  }
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& idle = self->state.idle;
    idle.erase(std::remove_if(idle.begin(), idle.end(),
                              [&](const caf::actor& w) { return w.address() == msg.source; }),
               idle.end());
    reissue_held_by(self, msg.source, "down");
    dispatch(self);
  });
  for (auto& w : st.config.workers) {
    self->monitor(w);
    self->send(w, chief_atom::value, caf::actor_cast<caf::actor>(self));
  }
  auto period = std::chrono::milliseconds(std::clamp<int64_t>(st.config.token_timeout_ms / 4, 10, 1000));
  self->delayed_send(self, period, tick_atom::value);
  auto resume = st.config.checkpoint_dir.empty() ? std::nullopt : read_state(st);
  if (resume) {
    st.restored = true;
    st.sweep = *resume;
    log_event(self, "restore");
    ask_shards<ok_atom>(
      self, [](size_t, ok_atom) {},
      [=] {
        auto& st = self->state;
        ++st.sweep;
        st.side = wals_side::rows;
        begin_phase(self);
      },
      load_atom::value, st.config.checkpoint_dir, *resume);
  } else {
    begin_phase(self);
  }
  return {
    [=](ready_atom, caf::actor worker) {
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
      if (st.accepting && std::all_of(st.committed.begin(), st.committed.end(),
                                      [](bool b) { return b; }))
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
