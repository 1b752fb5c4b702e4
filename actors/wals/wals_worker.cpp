#include "actors/wals/wals_worker.hpp"

#include <algorithm>
#include <limits>


#include "actors/fan_out.hpp"
#include "compute/placement.hpp"
#include "compute/ranking.hpp"
#include "compute/wals_math.hpp"
#include "messages/error.hpp"
#include "runtime/chaos.hpp"
#include "runtime/log.hpp"

namespace darcy::actors {

namespace {

constexpr uint32_t absent = std::numeric_limits<uint32_t>::max();
constexpr auto shard_timeout = std::chrono::minutes(5);

/// One block in flight: its token and layout, and (in place) the other side's shard buffers,
/// held until the solve ends. Its gathered rows and solution live in the worker's state.
struct block_job {
  wals_token token;
  caf::actor chief;
  std::shared_ptr<const wals_worker_state::block_layout> layout;
  std::vector<shared_floats> views;
  const compute::csr_matrix& rows() const { return layout->rows; }
};

using job_pointer = std::shared_ptr<block_job>;

void report_ready(wals_worker_pointer self) {
  auto& st = self->state;
  st.busy = false;
  if (st.chief)
    self->send(caf::actor_cast<wals_chief_actor>(st.chief), ready_atom::value,
               runtime::public_handle(caf::actor_cast<caf::actor>(self)));
}

void give_up(wals_worker_pointer self, const job_pointer& job, const caf::error& err) {
  runtime::log_warn("wals worker: {} block {} abandoned: {}", to_string(job->token.side),
                    job->token.block, render(err));
  report_ready(self);
}

std::vector<size_t> non_empty(const std::vector<std::vector<uint32_t>>& ids) {
  std::vector<size_t> targets;
  for (size_t s = 0; s < ids.size(); ++s)
    if (!ids[s].empty())
      targets.push_back(s);
  return targets;
}

/// Cuts the block's rows out of the side's matrix; unless the worker reads in place, maps their
/// columns onto slots.
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
  layout->weights = compute::observed_weights(layout->rows, st.config.params);
  layout->own_ids.resize(count);
  for (uint64_t id = layout->first; id < layout->first + layout->rows.rows; ++id)
    layout->own_ids[compute::shard_of(id, count)].push_back(static_cast<uint32_t>(id));
  if (st.in_place)
    return layout;
  layout->other_ids.resize(count);
  std::vector<bool> used(side.cols, false);
  for (auto c : layout->rows.indices)
    used[c] = true;
  for (uint32_t c = 0; c < side.cols; ++c)
    if (used[c])
      layout->other_ids[compute::shard_of(c, count)].push_back(c);
  layout->base.assign(count + 1, 0);
  st.slot.resize(side.cols, absent);
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

using id_lists = std::vector<std::vector<uint32_t>>;

/// The completion of a fan-out to the shards: a failed request, else a bad answer that a reply
/// handler recorded in `bad_answer` (may be null), abandons the job; otherwise `then` runs.
std::function<void(caf::error)> then_or_give_up(wals_worker_pointer self, job_pointer job,
                                                std::function<void()> then,
                                                std::shared_ptr<caf::error> bad_answer = {}) {
  return [=](caf::error err) {
    if (!err && bad_answer)
      err = *bad_answer;
    if (err)
      return give_up(self, job, err);
    then();
  };
}

caf::error wrong_size(size_t shard, size_t values, uint64_t rows, uint32_t dim) {
  return make_error(errc::dimension_mismatch,
                    "factor shard " + std::to_string(shard) + " answered " +
                      std::to_string(values) + " values for " + std::to_string(rows) +
                      " rows of dim " + std::to_string(dim));
}

/// Reads the rows `ids[s]` of `side` from each shard s and copies the i-th of shard s to
/// dest(s, i); then runs `then`. A failure, or an answer too short for its ids, abandons the job.
template <class Dest>
void read_rows(wals_worker_pointer self, job_pointer job, wals_side side,
               std::shared_ptr<const id_lists> ids, Dest dest, std::function<void()> then) {
  auto d = self->state.config.params.dim;
  auto count = static_cast<uint32_t>(self->state.shards.size());
  auto short_answer = std::make_shared<caf::error>();
  fan_out<shared_floats>(
    non_empty(*ids),
    [=](size_t s) {
      auto& shard = self->state.shards[s];
      if (self->state.co_located[s])
        return self->request(shard, shard_timeout, view_atom::value, side);
      return self->request(shard, shard_timeout, fetch_atom::value, side, (*ids)[s]);
    },
    [=](size_t s, shared_floats& reply) {
      auto rows = reply.values();
      auto& wanted = (*ids)[s];
      bool view = self->state.co_located[s];
      auto needed = view ? compute::local_row(wanted.back(), count) + 1 : wanted.size();
      if (rows.size() < needed * d) {
        *short_answer = wrong_size(s, rows.size(), needed, d);
        return;
      }
      for (size_t i = 0; i < wanted.size(); ++i)
        std::copy_n(rows.data() + (view ? compute::local_row(wanted[i], count) : i) * d, d, dest(s, i));
    },
    then_or_give_up(self, job, std::move(then), short_answer));
}

/// Holds every shard's current buffer of `side` in the job (each must hold all of its rows of
/// the side's `total`); then runs `then`.
void read_views(wals_worker_pointer self, job_pointer job, wals_side side, uint64_t total,
                std::function<void()> then) {
  auto d = self->state.config.params.dim;
  auto count = static_cast<uint32_t>(self->state.shards.size());
  job->views.assign(count, {});
  auto short_answer = std::make_shared<caf::error>();
  fan_out<shared_floats>(
    all_targets(count),
    [=](size_t s) {
      return self->request(self->state.shards[s], shard_timeout, view_atom::value, side);
    },
    [=](size_t s, shared_floats& reply) {
      auto rows = compute::rows_owned(total, static_cast<uint32_t>(s), count);
      if (reply.size() != rows * d)
        *short_answer = wrong_size(s, reply.size(), rows, d);
      job->views[s] = std::move(reply);
    },
    then_or_give_up(self, job, std::move(then), short_answer));
}

void commit(wals_worker_pointer self, job_pointer job, double observed_loss) {
  wals_commit c{job->token.epoch, job->token.block, job->token.attempt, job->rows().rows,
                job->rows().nnz(), observed_loss};
  self->send(caf::actor_cast<wals_chief_actor>(job->chief), commit_atom::value, c,
             runtime::public_handle(caf::actor_cast<caf::actor>(self)));
  self->state.busy = false;
  // A chief that took over while this block ran has not heard from us yet.
  if (self->state.chief && self->state.chief != job->chief)
    report_ready(self);
}

/// Writes the solution's first `limit` rows to the shards, then runs `then`. Co-located shards
/// share the whole block (each takes its rows); the others get their own rows only.
void write_rows(wals_worker_pointer self, job_pointer job, uint64_t limit,
                std::function<void()> then) {
  auto& st = self->state;
  auto d = st.config.params.dim;
  auto& own = job->layout->own_ids;
  auto first = job->layout->first;
  auto& solution = *st.solution;
  shared_floats block;
  if (std::find(st.co_located.begin(), st.co_located.end(), true) != st.co_located.end())
    block = limit == job->rows().rows
              ? shared_floats{std::shared_ptr<const std::vector<float>>(st.solution)}
              : shared_floats{std::vector<float>(solution.begin(), solution.begin() + limit * d)};
  std::vector<std::vector<uint32_t>> ids(own.size());
  std::vector<std::vector<float>> values(own.size());
  for (size_t s = 0; s < own.size(); ++s) {
    auto end = std::lower_bound(own[s].begin(), own[s].end(), first + limit);
    ids[s].assign(own[s].begin(), end);
    if (st.co_located[s])
      continue;
    values[s].resize(ids[s].size() * d);
    for (size_t i = 0; i < ids[s].size(); ++i)
      std::copy_n(solution.data() + (ids[s][i] - first) * d, d, values[s].data() + i * d);
  }
  auto side = job->token.side;
  fan_out<ok_atom>(
    non_empty(ids),
    [=](size_t s) mutable {
      auto& shard = self->state.shards[s];
      auto epoch = job->token.epoch;
      if (self->state.co_located[s])
        return self->request(shard, shard_timeout, write_atom::value, epoch, side,
                             uint64_t{first}, block);
      return self->request(shard, shard_timeout, write_atom::value, epoch, side,
                           std::move(ids[s]), std::move(values[s]));
    },
    [](size_t, ok_atom) {}, then_or_give_up(self, job, std::move(then)));
}

void solve(wals_worker_pointer self, job_pointer job) {
  auto& st = self->state;
  auto& p = st.config.params;
  double loss = 0;
  if (st.in_place) {
    std::vector<const float*> parts;
    for (auto& v : job->views)
      parts.push_back(v.values().data());
    loss = compute::solve_rows(job->rows(), 0, job->rows().rows,
                               compute::interleaved_factors{std::move(parts), p.dim},
                               job->token.gramian, p, st.solution->data(), job->layout->weights);
    job->views.clear(); // the shards may reuse the buffers
  } else {
    compute::factor_view other{st.other_rows.data(), job->layout->base.back(), p.dim};
    loss = compute::solve_rows(job->rows(), 0, job->rows().rows, other, job->token.gramian, p,
                               st.solution->data(), job->layout->weights);
  }
  auto& f = st.config.faults;
  if (f.drop_block >= 0 && static_cast<uint32_t>(f.drop_block) == job->token.block &&
      job->token.sweep == f.drop_sweep && job->token.attempt == 0 &&
      job->token.side == wals_side::rows) {
    // Injected fault: half the rows reach the shards, then the worker falls silent.
    write_rows(self, job, job->rows().rows / 2, [=] { runtime::write_fault_pid(f.pid_file); });
    return;
  }
  write_rows(self, job, job->rows().rows, [=] { commit(self, job, loss); });
}

void run_block(wals_worker_pointer self, const wals_token& token, caf::actor chief) {
  auto& st = self->state;
  st.busy = true;
  auto d = st.config.params.dim;
  auto& faults = st.config.faults;
  if (faults.fail_block >= 0 && token.side == wals_side::rows &&
      static_cast<uint32_t>(faults.fail_block) == token.block && token.sweep >= faults.drop_sweep) {
    runtime::log_warn("wals worker: rows block {} abandoned: injected fault", token.block);
    st.chief = std::move(chief);
    return report_ready(self);
  }
  if (token.gramian.size() != size_t{d} * d) {
    runtime::log_warn("wals worker: token with a Gramian of {} values for dim {}; ignored",
                      token.gramian.size(), d);
    return report_ready(self);
  }
  auto& layout = st.layouts[{token.side, token.blocks, token.block}];
  if (!layout)
    layout = make_layout(self, token);
  auto job = std::make_shared<block_job>(block_job{token, std::move(chief), layout, {}});
  // Cholesky overwrites the rows; CG starts from them.
  if (!st.solution || st.solution.use_count() > 1)
    st.solution = std::make_shared<std::vector<float>>();
  st.solution->assign(layout->rows.rows * d, 0.0f);
  auto warm_start_then_solve = [=] {
    if (self->state.config.params.solver != wals_solver::cg)
      return solve(self, job);
    auto& own = job->layout->own_ids;
    auto first = job->layout->first;
    read_rows(
      self, job, job->token.side, std::shared_ptr<const id_lists>(job->layout, &own),
      [=](size_t s, size_t i) {
        return self->state.solution->data() + (job->layout->own_ids[s][i] - first) * d;
      },
      [=] { solve(self, job); });
  };
  auto other_side = token.side == wals_side::rows ? wals_side::cols : wals_side::rows;
  if (st.in_place)
    return read_views(self, job, other_side, layout->rows.cols, warm_start_then_solve);
  st.other_rows.resize(layout->base.back() * d);
  auto& base = layout->base;
  read_rows(
    self, job, other_side, std::shared_ptr<const id_lists>(layout, &layout->other_ids),
    [=](size_t s, size_t i) { return self->state.other_rows.data() + (base[s] + i) * d; },
    warm_start_then_solve);
}

} // namespace

wals_worker_actor::behavior_type wals_worker(wals_worker_pointer self, wals_worker_config config,
                                             std::vector<factor_shard_actor> shards,
                                             std::shared_ptr<const stores::wals_dataset> data) {
  auto& st = self->state;
  st.config = std::move(config);
  st.shards = std::move(shards);
  st.data = std::move(data);
  for (auto& shard : st.shards)
    st.co_located.push_back(shard.node() == self->node());
  st.in_place = std::find(st.co_located.begin(), st.co_located.end(), false) == st.co_located.end();
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
  auto data = stores::load_shared_dataset(config.data);
  if (!data) {
    runtime::log_error("wals worker: cannot load the matrix: {}", render(data.error()));
    self->quit(data.error());
    return {[](chief_atom, caf::actor) {}, [](token_atom, const wals_token&, caf::actor) {}};
  }
  return wals_worker(self, std::move(config), std::move(shards), std::move(*data));
}

} // namespace darcy::actors
