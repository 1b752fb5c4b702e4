#include "actors/wals/wals_worker.hpp"

#include <algorithm>
#include <array>

#include <caf/event_based_actor.hpp>

#include "actors/fan_out.hpp"
#include "compute/placement.hpp"
#include "compute/ranking.hpp"
#include "compute/wals_math.hpp"
#include "messages/error.hpp"
#include "runtime/cluster/chaos.hpp"
#include "runtime/log.hpp"
#include "stores/embedding/huge_pages.hpp"

namespace darcy::actors {

namespace {

constexpr auto worker_shard_timeout = std::chrono::minutes(5);

/// One block in flight: its token and layout, and every shard's current buffer of both sides,
/// held until the solve ends. Its solution lives in the worker's state.
struct block_job {
  wals_token token;
  caf::actor chief;
  std::shared_ptr<const wals_worker_state::block_layout> layout;
  /// Indexed by side, then shard.
  std::array<std::vector<shared_floats>, 2> views;
  const compute::csr_matrix& rows() const { return layout->rows; }
};

using job_pointer = std::shared_ptr<block_job>;

void report_ready(wals_worker_pointer self) {
  auto& st = self->state;
  st.busy = false;
  if (st.chief)
    self->send(caf::actor_cast<wals_chief_actor>(st.chief), ready_atom::value, st.last_token,
               runtime::public_handle(caf::actor_cast<caf::actor>(self)));
}

void give_up(wals_worker_pointer self, const job_pointer& job, const caf::error& err) {
  runtime::log_warn("wals worker: {} block {} abandoned: {}", to_string(job->token.side),
                    job->token.block, render(err));
  report_ready(self);
}

/// The block's rows: cut out of the side's matrix in memory, or read from the side's file.
caf::expected<std::shared_ptr<const wals_worker_state::block_layout>> make_layout(
  wals_worker_pointer self, const wals_token& token) {
  auto& st = self->state;
  auto& bounds = st.partitions[{token.side, token.blocks}];
  std::shared_ptr<wals_worker_state::block_layout> layout;
  if (st.files) {
    // The last block's buffers, unless a job still holds them: a block of a large matrix is
    // hundreds of megabytes, whose fresh pages would cost more than reading them.
    if (st.spare_layout && st.spare_layout.use_count() == 1)
      layout = st.spare_layout;
    else
      layout = st.spare_layout = std::make_shared<wals_worker_state::block_layout>();
    auto& file = token.side == wals_side::rows ? st.files->rows : st.files->cols;
    if (bounds.empty())
      bounds = compute::balanced_blocks(std::span<const uint64_t>{file->offsets()}, token.blocks);
    layout->first = bounds[token.block];
    if (auto err = file->read_rows(bounds[token.block], bounds[token.block + 1], layout->rows))
      return err;
  } else {
    layout = std::make_shared<wals_worker_state::block_layout>();
    if (token.side == wals_side::cols && !st.transposed)
      st.transposed = stores::shared_transpose(st.data);
    auto& side = token.side == wals_side::rows ? st.data->matrix : *st.transposed;
    if (bounds.empty())
      bounds = compute::balanced_blocks(side, token.blocks);
    layout->first = bounds[token.block];
    layout->rows = compute::slice_rows(side, bounds[token.block], bounds[token.block + 1]);
  }
  compute::observed_weights(layout->rows, st.config.params, layout->weights);
  return layout;
}

/// Rows and columns of the matrix the worker solves.
std::pair<uint64_t, uint64_t> shape_of(const wals_worker_state& st) {
  if (st.files)
    return {st.files->rows->rows(), st.files->rows->cols()};
  return {st.data->matrix.rows, st.data->matrix.cols};
}

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

uint64_t chunk_rows(const wals_worker_config& c) {
  return c.view_chunk_rows > 0 ? c.view_chunk_rows : factor_view_chunk_rows(c.params.dim);
}

/// A remote shard's side, fetched a chunk at a time.
struct side_fetch {
  /// The version the first chunk named; every later chunk must name it too.
  uint64_t version = 0;
  /// Rows received so far (a new fetch has none).
  uint64_t received = 0;
  /// All of the shard's rows of the side, once received.
  std::vector<float> rows;
  bool started = false;
  bool complete = false;
};

struct views_read {
  job_pointer job;
  wals_side side;
  uint64_t total = 0;
  /// Indexed by shard; co-located shards complete in the first round.
  std::vector<side_fetch> fetches;
  /// The version each first request said this node holds: a shard answers rows (possibly none,
  /// when it owns no row of the side) exactly when its version differs.
  std::vector<uint64_t> known;
  std::function<void()> then;
};

/// Takes a shard's answer into read->fetches[s] (and job->views once complete), or an error
/// that ends the read.
caf::error take_view(wals_worker_pointer self, views_read& read, size_t s, factor_snapshot& reply) {
  auto& st = self->state;
  auto d = st.config.params.dim;
  auto count = static_cast<uint32_t>(st.shards.size());
  auto rows = compute::rows_owned(read.total, static_cast<uint32_t>(s), count);
  auto& f = read.fetches[s];
  auto& view = read.job->views[static_cast<size_t>(read.side)][s];
  auto wrong_size = [&](uint64_t want) {
    return make_error(errc::dimension_mismatch, "factor shard " + std::to_string(s) + " answered " +
                                                  std::to_string(reply.rows.size()) +
                                                  " values for " + std::to_string(want) +
                                                  " rows of dim " + std::to_string(d));
  };
  if (st.co_located[s]) {
    if (reply.rows.size() != rows * d)
      return wrong_size(rows);
    view = std::move(reply.rows);
    f.complete = true;
    return {};
  }
  if (!f.started && reply.version == read.known[s]) {
    auto held = st.cache->get(s, read.side);
    // Another worker of this node cached a later version meanwhile: this job is stale.
    if (held.version != reply.version)
      return make_error(errc::invalid_argument, "factor shard " + std::to_string(s) +
                                                  " holds version " +
                                                  std::to_string(reply.version) + ", this node " +
                                                  std::to_string(held.version));
    view = std::move(held.rows);
    f.complete = true;
    return {};
  }
  if (!f.started) {
    f = side_fetch{reply.version, 0, {}, true, false};
    // Blocks read these rows at random: on huge pages, a read costs fewer TLB misses.
    stores::assign_on_huge_pages(f.rows, rows * d);
  } else if (reply.version != f.version) {
    return make_error(errc::invalid_argument, "factor shard " + std::to_string(s) +
                                                " moved from version " + std::to_string(f.version) +
                                                " to " + std::to_string(reply.version) +
                                                " while this node read it");
  }
  auto want = std::min(chunk_rows(st.config), rows - f.received);
  if (reply.rows.size() != want * d)
    return wrong_size(want);
  std::copy_n(reply.rows.values().data(), want * d, f.rows.data() + f.received * d);
  f.received += want;
  if (f.received < rows)
    return {};
  f.complete = true;
  view = shared_floats{std::move(f.rows)};
  st.cache->put(s, read.side, {f.version, view});
  return {};
}

/// One round of view requests: the whole side of each co-located shard, the next chunk of each
/// remote one (a node's heartbeats queue behind what crosses its link, so no message is
/// large). Rounds repeat until every shard's side is held.
void read_round(wals_worker_pointer self, std::shared_ptr<views_read> read) {
  std::vector<size_t> targets;
  for (size_t s = 0; s < read->fetches.size(); ++s)
    if (!read->fetches[s].complete)
      targets.push_back(s);
  if (targets.empty())
    return read->then();
  auto bad_answer = std::make_shared<caf::error>();
  auto chunk = chunk_rows(self->state.config);
  fan_out<factor_snapshot>(
    targets,
    [=](size_t s) {
      auto& st = self->state;
      auto& shard = st.shards[s];
      if (st.co_located[s])
        return self->request(shard, worker_shard_timeout, view_atom::value, read->side,
                             uint64_t{0});
      auto& f = read->fetches[s];
      if (!f.started)
        read->known[s] = st.cache->get(s, read->side).version;
      return self->request(shard, worker_shard_timeout, view_atom::value, read->side,
                           f.started ? uint64_t{0} : read->known[s], f.received, chunk);
    },
    [=](size_t s, factor_snapshot& reply) {
      if (*bad_answer)
        return;
      *bad_answer = take_view(self, *read, s, reply);
    },
    then_or_give_up(
      self, read->job, [=] { read_round(self, read); }, bad_answer));
}

/// Holds every shard's current buffer of `side` in job->views (each must hold all of its rows
/// of the side's `total`): co-located shards share theirs, remote ones go through the cache,
/// which asks them only for a version it lacks, a chunk at a time. Then runs `then`.
void read_views(wals_worker_pointer self, job_pointer job, wals_side side, uint64_t total,
                std::function<void()> then) {
  auto count = self->state.shards.size();
  job->views[static_cast<size_t>(side)].assign(count, {});
  auto read =
    std::make_shared<views_read>(views_read{job, side, total, std::vector<side_fetch>(count),
                                            std::vector<uint64_t>(count, 0), std::move(then)});
  read_round(self, std::move(read));
}

compute::interleaved_factors factors_of(const std::vector<shared_floats>& views, uint32_t dim) {
  std::vector<const float*> parts;
  for (auto& v : views)
    parts.push_back(v.values().data());
  return compute::interleaved_factors{std::move(parts), dim};
}

void commit(wals_worker_pointer self, job_pointer job, double observed_loss) {
  wals_commit c{job->token.epoch, job->token.block,  job->token.attempt,
                job->rows().rows, job->rows().nnz(), observed_loss};
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
  auto count = static_cast<uint32_t>(st.shards.size());
  auto first = job->layout->first;
  auto& solution = *st.solution;
  shared_floats block;
  if (std::find(st.co_located.begin(), st.co_located.end(), true) != st.co_located.end())
    block = limit == job->rows().rows
              ? shared_floats{std::shared_ptr<const std::vector<float>>(st.solution)}
              : shared_floats{std::vector<float>(solution.begin(), solution.begin() + limit * d)};
  std::vector<shared_floats> values(count);
  for (uint32_t s = 0; s < count; ++s) {
    if (st.co_located[s]) {
      values[s] = block;
      continue;
    }
    std::vector<float> owned;
    owned.reserve(compute::rows_owned(limit, s, count) * d);
    for (auto r = compute::first_owned_offset(first, s, count); r < limit; r += count)
      owned.insert(owned.end(), solution.data() + r * d, solution.data() + (r + 1) * d);
    values[s] = shared_floats{std::move(owned)};
  }
  auto side = job->token.side;
  auto epoch = job->token.epoch;
  fan_out<ok_atom>(
    all_targets(count),
    [=](size_t s) {
      return self->request(self->state.shards[s], worker_shard_timeout, write_atom::value, epoch,
                           side, uint64_t{first}, uint64_t{limit}, values[s]);
    },
    [](size_t, ok_atom) {}, then_or_give_up(self, job, std::move(then)));
}

void solve(wals_worker_pointer self, job_pointer job) {
  auto& st = self->state;
  auto& p = st.config.params;
  auto& other_views = job->views[static_cast<size_t>(opposite(job->token.side))];
  auto loss = compute::solve_rows(job->rows(), 0, job->rows().rows, factors_of(other_views, p.dim),
                                  job->token.gramian, p, st.solution->data(), job->layout->weights);
  job->views = {}; // the shards may reuse the buffers
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

/// CG starts from the block's current rows; Cholesky overwrites them.
void warm_start(wals_worker_pointer self, job_pointer job) {
  auto& st = self->state;
  auto d = st.config.params.dim;
  auto own = factors_of(job->views[static_cast<size_t>(job->token.side)], d);
  auto* out = st.solution->data();
  for (uint64_t r = 0; r < job->rows().rows; ++r)
    std::copy_n(own.row(job->layout->first + r), d, out + r * d);
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
  // Blocks read from disk are read again each sweep: only the one being solved is held.
  std::shared_ptr<const wals_worker_state::block_layout> layout;
  if (!st.files)
    layout = st.layouts[{token.side, token.blocks, token.block}];
  if (!layout) {
    auto made = make_layout(self, token);
    if (!made) {
      runtime::log_warn("wals worker: {} block {} abandoned: {}", to_string(token.side),
                        token.block, render(made.error()));
      st.chief = std::move(chief);
      return report_ready(self);
    }
    layout = std::move(*made);
    if (!st.files)
      st.layouts[{token.side, token.blocks, token.block}] = layout;
  }
  auto job = std::make_shared<block_job>(block_job{token, std::move(chief), layout, {}});
  if (!st.solution || st.solution.use_count() > 1)
    st.solution = std::make_shared<std::vector<float>>();
  st.solution->assign(layout->rows.rows * d, 0.0f);
  auto [rows, cols] = shape_of(st);
  auto own_total = token.side == wals_side::rows ? rows : cols;
  read_views(self, job, opposite(token.side), layout->rows.cols, [=] {
    if (self->state.config.params.solver != wals_solver::cg)
      return solve(self, job);
    read_views(self, job, job->token.side, own_total, [=] {
      warm_start(self, job);
      solve(self, job);
    });
  });
}

} // namespace

namespace {

void adopt(wals_worker_pointer self, std::shared_ptr<const stores::wals_dataset> data,
           std::optional<stores::wals_csr_sides> files) {
  auto& st = self->state;
  st.data = std::move(data);
  st.files = std::move(files);
  for (auto& shard : st.shards)
    st.co_located.push_back(shard.node() == self->node());
  st.cache = factor_cache::of(st.shards);
}

wals_worker_actor::behavior_type serve(wals_worker_pointer self) {
  return {
    [=](chief_atom, caf::actor chief) {
      self->state.chief = std::move(chief);
      if (!self->state.busy)
        report_ready(self);
    },
    [=](token_atom, const wals_token& token, caf::actor chief) {
      self->state.last_token = {token.epoch, token.block, token.attempt};
      if (self->state.busy) // a chief that lost track of us; it re-issues on timeout
        return;
      run_block(self, token, std::move(chief));
    },
  };
}

} // namespace

wals_worker_actor::behavior_type wals_worker(wals_worker_pointer self, wals_worker_config config,
                                             std::vector<factor_shard_actor> shards,
                                             std::shared_ptr<const stores::wals_dataset> data) {
  self->state.config = std::move(config);
  self->state.shards = std::move(shards);
  if (data) {
    adopt(self, std::move(data), std::nullopt);
    return serve(self);
  }
  auto files = stores::open_wals_csr(self->state.config.data.path);
  if (!files) {
    runtime::log_error("wals worker: cannot open the matrix: {}", render(files.error()));
    self->quit(files.error());
    return serve(self);
  }
  adopt(self, nullptr, std::move(*files));
  return serve(self);
}

wals_worker_actor::behavior_type wals_worker_loading(wals_worker_pointer self,
                                                     wals_worker_config config,
                                                     std::vector<factor_shard_actor> shards) {
  self->state.config = std::move(config);
  self->state.shards = std::move(shards);
  // The load runs on a thread of its own: a node's scheduler threads (one in a local cluster)
  // keep serving its registry and agent meanwhile. Tokens wait in the mailbox until it ends.
  struct loaded {
    caf::expected<std::shared_ptr<const stores::wals_dataset>> data{nullptr};
    caf::expected<stores::wals_csr_sides> files{stores::wals_csr_sides{}};
  };
  auto result = std::make_shared<loaded>();
  auto loader = self->spawn<caf::detached>(
    [result, spec = self->state.config.data](caf::event_based_actor* helper) -> caf::behavior {
      return {[=](load_atom) {
        if (spec.format == "csr")
          result->files = stores::open_wals_csr(spec.path);
        else
          result->data = stores::load_shared_dataset(spec);
        helper->quit();
        return true;
      }};
    });
  self->request(loader, caf::infinite, load_atom::value)
    .await(
      [self, result](bool) {
        caf::error err;
        if (!result->data)
          err = result->data.error();
        else if (!result->files)
          err = result->files.error();
        if (!err) {
          std::optional<stores::wals_csr_sides> files;
          if (!*result->data)
            files = std::move(*result->files);
          adopt(self, std::move(*result->data), std::move(files));
          return;
        }
        runtime::log_error("wals worker: cannot load the matrix: {}", render(err));
        self->quit(err);
      },
      [self](caf::error& err) { self->quit(err); });
  return serve(self);
}

} // namespace darcy::actors
