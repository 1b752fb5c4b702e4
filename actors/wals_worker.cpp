#include "actors/wals_worker.hpp"

#include <iostream>
#include <limits>

#include <unistd.h>

#include "actors/factor_shard.hpp"
#include "actors/fan_out.hpp"
#include "compute/ranking.hpp"
#include "compute/wals.hpp"
#include "messages/errc.hpp"
#include "stores/atomic_file.hpp"

namespace darcy::actors {

namespace {

constexpr uint32_t absent = std::numeric_limits<uint32_t>::max();
constexpr auto shard_timeout = std::chrono::minutes(5);

/// One block in flight: its layout (rows and the other side's rows they read) and the solution.
struct block_job {
  wals_token token;
  caf::actor chief;
  std::shared_ptr<const wals_worker_state::block_layout> layout;
  uint64_t first = 0;
  const compute::csr_matrix* rows_ptr = nullptr;
  const compute::csr_matrix& rows() const { return *rows_ptr; }
  std::vector<float> other;
  std::vector<float> solution;
};

void report_ready(wals_worker_pointer self) {
  auto& st = self->state;
  st.busy = false;
  if (st.chief)
    self->send(caf::actor_cast<wals_chief_actor>(st.chief), ready_atom::value,
               caf::actor_cast<caf::actor>(self));
}

void give_up(wals_worker_pointer self, const std::shared_ptr<block_job>& job,
             const caf::error& err) {
  std::cerr << "wals worker: " << to_string(job->token.side) << " block " << job->token.block
            << " abandoned: " << render(err) << '\n';
  report_ready(self);
}

/// Cuts the block's rows out of the side's matrix and maps their columns onto fetch slots.
std::shared_ptr<const wals_worker_state::block_layout> make_layout(wals_worker_pointer self,
                                                                  const wals_token& token) {
  auto& st = self->state;
  auto& data = *st.data;
  if (token.side == wals_side::cols && !st.transposed)
    st.transposed = std::make_unique<compute::csr_matrix>(compute::transpose(data.matrix));
  auto& side = token.side == wals_side::rows ? data.matrix : *st.transposed;
  auto& bounds = st.partitions[{token.side, token.blocks}];
  if (bounds.empty())
    bounds = compute::balanced_blocks(side, token.blocks);
  auto layout = std::make_shared<wals_worker_state::block_layout>();
  layout->first = bounds[token.block];
  layout->rows = compute::slice_rows(side, bounds[token.block], bounds[token.block + 1]);
  auto count = static_cast<uint32_t>(st.shards.size());
  layout->other_ids.resize(count);
  st.slot.resize(side.cols, absent);
  for (auto c : layout->rows.indices)
    if (st.slot[c] == absent) {
      st.slot[c] = 0;
      layout->other_ids[shard_of(c, count)].push_back(c);
    }
  layout->base.assign(count + 1, 0);
  for (uint32_t s = 0; s < count; ++s) {
    layout->base[s + 1] = layout->base[s] + layout->other_ids[s].size();
    for (size_t i = 0; i < layout->other_ids[s].size(); ++i)
      st.slot[layout->other_ids[s][i]] = static_cast<uint32_t>(layout->base[s] + i);
  }
  for (auto& c : layout->rows.indices)
    c = st.slot[c];
  for (auto& ids : layout->other_ids)
    for (auto id : ids)
      st.slot[id] = absent;
  return layout;
}

std::shared_ptr<block_job> prepare(wals_worker_pointer self, const wals_token& token,
                                   caf::actor chief) {
  auto& cached = self->state.layouts[{token.side, token.blocks, token.block}];
  if (!cached)
    cached = make_layout(self, token);
  auto job = std::make_shared<block_job>();
  job->token = token;
  job->chief = std::move(chief);
  job->layout = cached;
  job->first = cached->first;
  job->rows_ptr = &cached->rows;
  return job;
}

void commit(wals_worker_pointer self, std::shared_ptr<block_job> job, double observed_loss) {
  wals_commit c{job->token.epoch, job->token.block, job->token.attempt, job->rows().rows,
                job->rows().nnz(), observed_loss};
  self->send(caf::actor_cast<wals_chief_actor>(job->chief), commit_atom::value, c,
             caf::actor_cast<caf::actor>(self));
  self->state.busy = false;
  // A chief that took over while this block ran has not heard from us yet.
  if (self->state.chief && self->state.chief != job->chief)
    report_ready(self);
}

/// Writes rows [0, limit) of the solution to the shards, then runs `then`.
void write_rows(wals_worker_pointer self, std::shared_ptr<block_job> job, uint64_t limit,
                std::function<void()> then) {
  auto& st = self->state;
  auto count = static_cast<uint32_t>(st.shards.size());
  auto d = st.config.params.dim;
  auto other_side = job->token.side;
  std::vector<std::vector<uint32_t>> ids(count);
  std::vector<std::vector<float>> values(count);
  for (uint64_t r = 0; r < limit; ++r) {
    auto id = job->first + r;
    auto s = shard_of(id, count);
    ids[s].push_back(static_cast<uint32_t>(id));
    values[s].insert(values[s].end(), job->solution.begin() + r * d,
                     job->solution.begin() + (r + 1) * d);
  }
  std::vector<size_t> targets;
  for (size_t s = 0; s < count; ++s)
    if (!ids[s].empty())
      targets.push_back(s);
  if (targets.empty())
    return then();
  fan_out<ok_atom>(
    targets,
    [=](size_t s) mutable {
      return self->request(self->state.shards[s], shard_timeout, write_atom::value,
                           job->token.epoch, other_side, std::move(ids[s]), std::move(values[s]));
    },
    [](size_t, ok_atom) {},
    [=](caf::error err) {
      if (err)
        return give_up(self, job, err);
      then();
    });
}

void solve(wals_worker_pointer self, std::shared_ptr<block_job> job) {
  auto& st = self->state;
  auto& p = st.config.params;
  auto d = p.dim;
  compute::factor_view other{job->other.data(), job->layout->base.back(), d};
  double loss = compute::solve_rows(job->rows(), 0, job->rows().rows, other, job->token.gramian, p,
                                    job->solution.data());
  auto& f = st.config.faults;
  if (f.drop_block >= 0 && static_cast<uint32_t>(f.drop_block) == job->token.block &&
      job->token.sweep == f.drop_sweep && job->token.attempt == 0 &&
      job->token.side == wals_side::rows) {
    // Injected fault: half the rows reach the shards, then the worker falls silent.
    write_rows(self, job, job->rows().rows / 2, [=] { write_fault_pid(f.pid_file); });
    return;
  }
  write_rows(self, job, job->rows().rows, [=] { commit(self, job, loss); });
}

void fetch_warm_start(wals_worker_pointer self, std::shared_ptr<block_job> job) {
  auto& st = self->state;
  auto d = st.config.params.dim;
  job->solution.assign(job->rows().rows * d, 0.0f);
  if (st.config.params.solver != wals_solver::cg)
    return solve(self, job);
  auto count = static_cast<uint32_t>(st.shards.size());
  std::vector<std::vector<uint32_t>> ids(count);
  for (uint64_t r = 0; r < job->rows().rows; ++r)
    ids[shard_of(job->first + r, count)].push_back(static_cast<uint32_t>(job->first + r));
  std::vector<size_t> targets;
  for (size_t s = 0; s < count; ++s)
    if (!ids[s].empty())
      targets.push_back(s);
  auto side = job->token.side;
  fan_out<std::vector<float>>(
    targets,
    [=](size_t s) {
      return self->request(self->state.shards[s], shard_timeout, fetch_atom::value, side, ids[s]);
    },
    [=](size_t s, std::vector<float>& rows) {
      for (size_t i = 0; i < ids[s].size(); ++i)
        std::copy_n(rows.data() + i * d, d, job->solution.data() + (ids[s][i] - job->first) * d);
    },
    [=](caf::error err) {
      if (err)
        return give_up(self, job, err);
      solve(self, job);
    });
}

void run_block(wals_worker_pointer self, const wals_token& token, caf::actor chief) {
  auto& st = self->state;
  st.busy = true;
  auto d = st.config.params.dim;
  if (token.gramian.size() != size_t{d} * d) {
    std::cerr << "wals worker: token with a Gramian of " << token.gramian.size()
              << " values for dim " << d << "; ignored\n";
    return report_ready(self);
  }
  auto job = prepare(self, token, std::move(chief));
  job->other.resize(job->layout->base.back() * d);
  auto other_side = token.side == wals_side::rows ? wals_side::cols : wals_side::rows;
  fan_out<std::vector<float>>(
    all_targets(st.shards.size()),
    [=](size_t s) {
      return self->request(self->state.shards[s], shard_timeout, fetch_atom::value, other_side,
                           job->layout->other_ids[s]);
    },
    [=](size_t s, std::vector<float>& rows) {
      std::copy(rows.begin(), rows.end(), job->other.begin() + job->layout->base[s] * d);
    },
    [=](caf::error err) {
      if (err)
        return give_up(self, job, err);
      fetch_warm_start(self, job);
    });
}

} // namespace

void write_fault_pid(const std::string& path) {
  if (!path.empty())
    (void) stores::write_file_atomically(path, std::to_string(getpid()) + "\n");
}

wals_worker_actor::behavior_type wals_worker(wals_worker_pointer self, wals_worker_config config,
                                             std::vector<factor_shard_actor> shards,
                                             std::shared_ptr<const stores::wals_dataset> data) {
  auto& st = self->state;
  st.config = std::move(config);
  st.shards = std::move(shards);
  st.data = std::move(data);
  return {
    [=](chief_atom, caf::actor chief) {
      self->state.chief = std::move(chief);
      if (!self->state.busy)
        report_ready(self);
    },
    [=](token_atom, const wals_token& token, caf::actor chief) {
      if (self->state.busy) // a chief that lost track of us; it re-issues on timeout
        return;
      run_block(self, token, std::move(chief));
    },
  };
}

wals_worker_actor::behavior_type wals_worker_loading(wals_worker_pointer self,
                                                     wals_worker_config config,
                                                     std::vector<factor_shard_actor> shards) {
  auto data = stores::load_dataset(config.data);
  if (!data) {
    std::cerr << "wals worker: cannot load the matrix: " << render(data.error()) << '\n';
    self->quit(data.error());
    return {[](chief_atom, caf::actor) {}, [](token_atom, const wals_token&, caf::actor) {}};
  }
  return wals_worker(self, std::move(config), std::move(shards),
                     std::make_shared<const stores::wals_dataset>(std::move(*data)));
}

} // namespace darcy::actors
